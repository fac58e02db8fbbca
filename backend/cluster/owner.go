package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The owner's side of commands (commands.go is the poster's): run what other nodes post for
// this node's executions, through the handle a local call gets, and answer.

// commandLoop runs the commands other nodes post for this node's executions: at start (what
// was posted while it was down), at every command notice and at every poll.
func (c *Cluster) commandLoop(stop <-chan struct{}) {
	release := c.wake.acquire(commandQueueWakeKey)
	defer release()
	for {
		woken := c.wake.channel(commandQueueWakeKey)
		ctx, cancel := context.WithTimeout(c.ctx(), c.lease)
		cmds, err := c.store.PendingCommands(ctx)
		cancel()
		if err != nil {
			c.storeErrors.Error("read the commands posted for this node", err)
		}
		for _, cmd := range cmds {
			c.commandsMu.Lock()
			busy := c.inflight[cmd.ID]
			c.inflight[cmd.ID] = true
			c.commandsMu.Unlock()
			if busy {
				continue
			}
			if !c.host.Track(func() { c.runCommand(cmd) }) {
				return // closing: the commands stay posted; their posters wait for the takeover
			}
		}
		select {
		case <-woken:
		case <-stop:
			return
		}
	}
}

// runCommand runs one command on this node (the owner) and answers it.
func (c *Cluster) runCommand(cmd store.Command) {
	exec, ok, err := c.commandOutcome(cmd)
	if errors.Is(err, backend.ErrClosed) {
		// This node is closing: the answer is not its to give. The command stays posted; its
		// poster waits for this node's next Open (which answers it) or for the takeover.
		return
	}
	if !ok {
		// Not answerable yet: the record says this node runs it, but it is not live here (its
		// start is being settled, or this node fenced it and its failure is on the way). The
		// next poll tries again.
		c.commandsMu.Lock()
		delete(c.inflight, cmd.ID)
		c.commandsMu.Unlock()
		return
	}
	result := encodeCommandResult(exec, err)
	// The outcome is final (a response applied cannot be applied again): keep answering it
	// until the store takes it, or the runtime closes.
	for backoff := answerRetryMin; ; backoff = min(2*backoff, answerRetryMax) {
		ctx, cancel := context.WithTimeout(context.Background(), c.lease)
		err := c.store.AnswerCommand(ctx, cmd.ID, result)
		cancel()
		if err == nil {
			break
		}
		c.storeErrors.Error("answer a command of another node", err, "execution", cmd.ExecutionID)
		select {
		case <-time.After(backoff):
		case <-c.stopping():
			return
		}
	}
	c.commandsMu.Lock()
	delete(c.inflight, cmd.ID)
	c.commandsMu.Unlock()
}

// commandOutcome runs cmd through the handle a local call gets and returns its answer: the
// execution or the error the caller gets. ok is false when the command cannot be answered now
// and must be tried again. The tenant was checked where the command was posted.
func (c *Cluster) commandOutcome(cmd store.Command) (exec api.Execution, ok bool, answer error) {
	h, err := c.host.Locate(cmd.ExecutionID)
	switch {
	case backend.ErrorCode(err) == backend.CodeNotFound:
		return api.Execution{}, true, err
	case err != nil:
		return api.Execution{}, false, nil // the store could not answer: the next poll tries again
	}
	if remote, isRemote := h.(remoteHandle); isRemote {
		if owner := remote.rec.Owner; owner != c.node {
			// Taken over and resumed by another node meanwhile: its poster asks that one now.
			return api.Execution{}, true, backend.InternalError("run command", fmt.Errorf("execution %s moved to node %s", cmd.ExecutionID, owner))
		}
		// This node's, but not live here: it was fenced and the failure of its claimer is on
		// the way, or a takeover is resuming it.
		return api.Execution{}, false, nil
	}
	// The poster waits as long as its caller does; the owner finishes the work regardless, as
	// a local call does when its caller goes away.
	ctx := context.Background()
	switch cmd.Kind {
	case store.CommandCancel:
		var body cancelBody
		if err := json.Unmarshal(cmd.Body, &body); err != nil {
			return api.Execution{}, true, backend.InternalError("decode cancel command", err)
		}
		ctx, span := c.runCommandSpan(ctx, cmd, body.TraceParent)
		defer span.End()
		exec, err := h.Cancel(withActorOf(ctx, body.Actor), body.Reason)
		return exec, true, err
	case store.CommandRespond:
		var body respondBody
		if err := json.Unmarshal(cmd.Body, &body); err != nil {
			return api.Execution{}, true, backend.InternalError("decode respond command", err)
		}
		ctx, span := c.runCommandSpan(ctx, cmd, body.TraceParent)
		defer span.End()
		response := body.ActionResponse
		exec, err := h.Respond(withActorOf(ctx, body.Actor), cmd.ActionID, func() (api.ActionResponse, error) { return response, nil })
		return exec, true, err
	default:
		return api.Execution{}, true, backend.InternalError("run command", errors.New("unknown command kind "+cmd.Kind))
	}
}
