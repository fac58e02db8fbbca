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

// Commands: a :cancel or :respond that arrives at a node which does not run the execution is
// posted to the owner through the store and answered by it, through the same handle a local
// call gets. The poster waits for the answer (woken by its notice, or the poll) and returns it
// as its own, error codes included, so the caller cannot tell which node did the work.

// Retry bounds of answering a command while the store refuses.
const (
	answerRetryMin = 50 * time.Millisecond
	answerRetryMax = 2 * time.Second
)

// A command's body carries, beside the request, the poster's identity (backend.WithActor) and
// trace context (traceparent, tracing.go): an owner that predates a member ignores it
// (encoding/json drops unknown names), and one that knows it reads a body without it as
// "nobody named" and "no trace".

// cancelBody is the body of a cancel command.
type cancelBody struct {
	Reason      *string    `json:"reason,omitempty"`
	Actor       *api.Actor `json:"actor,omitempty"`
	TraceParent string     `json:"traceParent,omitempty"`
}

// respondBody is the body of a respond command: the ActionResponse with the poster's members
// beside its fields.
type respondBody struct {
	api.ActionResponse
	Actor       *api.Actor `json:"actor,omitempty"`
	TraceParent string     `json:"traceParent,omitempty"`
}

// withActorOf returns ctx acting as a (the identity a command carried), kind included: an
// expiry's or a rule's answer posted by another node is recorded as what it is, not as a person
// named "expiry". nil leaves ctx as it is.
func withActorOf(ctx context.Context, a *api.Actor) context.Context {
	if a == nil {
		return ctx
	}
	return backend.WithActorOf(ctx, *a)
}

// commandResult is a command's answer: the execution, or the protocol error.
type commandResult struct {
	Execution *api.Execution `json:"execution,omitempty"`
	Error     *commandError  `json:"error,omitempty"`
}

type commandError struct {
	Code    backend.Code   `json:"code"`
	Message string         `json:"message"`
	Details api.JSONObject `json:"details,omitempty"`
}

func encodeCommandResult(exec api.Execution, err error) []byte {
	var res commandResult
	if err != nil {
		var e *backend.Error
		if !errors.As(err, &e) {
			e = backend.InternalError("run command", err)
		}
		res.Error = &commandError{Code: e.Code, Message: e.Message, Details: e.Details}
	} else {
		res.Execution = &exec
	}
	raw, err := json.Marshal(res)
	if err != nil { // an api.Execution always encodes
		panic(fmt.Sprintf("cluster: encode a command result: %v", err))
	}
	return raw
}

func decodeCommandResult(raw []byte) (api.Execution, error) {
	var res commandResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return api.Execution{}, backend.InternalError("decode command result", err)
	}
	if res.Error != nil {
		return api.Execution{}, &backend.Error{Code: res.Error.Code, Message: res.Error.Message, Details: res.Error.Details}
	}
	if res.Execution == nil {
		return api.Execution{}, backend.InternalError("decode command result", errors.New("empty result"))
	}
	return *res.Execution, nil
}

// cancelElsewhere cancels an execution this node does not run: the owner cancels it (one
// single flight, whoever asked) and the answer is the owner's. If the owner died, the node that
// takes over its lease fails the execution; the terminal record is then the answer, as a
// cancel of a finished execution is on one node.
func (c *Cluster) cancelElsewhere(ctx context.Context, rec store.Execution, reason *string) (api.Execution, error) {
	ctx, span := c.startCommandSpan(ctx, store.CommandCancel, rec)
	defer span.End()
	body, err := json.Marshal(cancelBody{Reason: reason, Actor: backend.ActorFrom(ctx), TraceParent: backend.TraceParent(ctx)})
	if err != nil {
		return api.Execution{}, backend.InternalError("encode cancel command", err)
	}
	cmd := store.Command{
		Node:        rec.Owner,
		Kind:        store.CommandCancel,
		ExecutionID: rec.Execution.ID,
		Body:        body,
	}
	return c.awaitCommand(ctx, cmd, func(rec store.Execution) (api.Execution, bool, error) {
		if rec.Execution.State.Terminal() {
			return backend.CloneExecution(rec.Execution), true, nil
		}
		return api.Execution{}, false, nil
	})
}

// respondElsewhere is the second half of RespondToAction for an execution this node does not
// run, once the checks against the store passed and the body was decoded: the owner applies
// the response under the execution's lock, so two answers on two nodes give one success and
// one ACTION_ALREADY_RESOLVED. If the owner died, the node that takes over fails the execution
// and abandons the action, which then answers ACTION_NOT_FOUND.
func (c *Cluster) respondElsewhere(ctx context.Context, rec store.Execution, actionID string, response api.ActionResponse) (api.Execution, error) {
	ctx, span := c.startCommandSpan(ctx, store.CommandRespond, rec)
	defer span.End()
	body, err := json.Marshal(respondBody{ActionResponse: response, Actor: backend.ActorFrom(ctx), TraceParent: backend.TraceParent(ctx)})
	if err != nil {
		return api.Execution{}, &backend.Error{Code: backend.CodeValidation, Message: "Invalid action response"}
	}
	cmd := store.Command{
		Node:        rec.Owner,
		Kind:        store.CommandRespond,
		ExecutionID: rec.Execution.ID,
		ActionID:    actionID,
		Body:        body,
	}
	taken := backend.NodeStoppedMessage(rec.Owner)
	return c.awaitCommand(ctx, cmd, func(rec store.Execution) (api.Execution, bool, error) {
		// Only a takeover ends the wait without the owner's answer: an owner that is alive
		// answers even when the execution finished right after applying the response.
		if rec.Execution.State == api.ExecutionStateFailed && rec.Execution.Error != nil && rec.Execution.Error.Message == taken {
			return api.Execution{}, true, c.host.ActionNotPending(rec.Execution.ID, actionID)
		}
		return api.Execution{}, false, nil
	})
}

// awaitCommand posts cmd and waits for the owner's answer, or for settled to accept the
// execution's record instead (the owner may be dead), for at most commandWait: then it answers
// UNAVAILABLE (unansweredCommand). If ctx ends first, or the bound passes, the command still
// runs on the owner when it gets to it; only the wait is abandoned, as with a local cancel.
func (c *Cluster) awaitCommand(ctx context.Context, cmd store.Command,
	settled func(store.Execution) (api.Execution, bool, error)) (api.Execution, error) {
	bound := time.NewTimer(c.commandWait())
	defer bound.Stop()
	recordKey := executionWakeKey(cmd.ExecutionID)
	releaseRecord := c.wake.acquire(recordKey)
	defer releaseRecord()
	id, releaseResult, err := c.postCommand(ctx, cmd)
	if err != nil {
		return api.Execution{}, err
	}
	defer func() { releaseResult() }()
	for {
		answered, changed := c.wake.channel(commandWakeKey(id)), c.wake.channel(recordKey)
		if err := c.host.CheckOpen(); err != nil {
			return api.Execution{}, err
		}
		raw, ok, err := c.store.CommandResult(ctx, id)
		if err == nil && ok {
			return decodeCommandResult(raw)
		}
		if err == nil {
			var rec store.Execution
			var found bool
			rec, found, err = c.host.Store().Execution(cmd.ExecutionID)
			if err == nil && found {
				if exec, done, err := settled(rec); done {
					return exec, err
				}
				if moved := rec.Owner; moved != "" && moved != cmd.Node && !rec.Execution.State.Terminal() {
					// A takeover resumed it on another node (lease.go): ask that one.
					cmd.Node = moved
					releaseResult()
					if id, releaseResult, err = c.postCommand(ctx, cmd); err != nil {
						releaseResult = func() {}
						return api.Execution{}, err
					}
					continue
				}
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return api.Execution{}, ctx.Err()
			}
			// A store that cannot answer now may answer at the next wake-up (the poll).
			c.storeErrors.Error("wait for another node's answer", err, "execution", cmd.ExecutionID)
		}
		select {
		case <-answered:
		case <-changed:
		case <-bound.C:
			return api.Execution{}, c.unansweredCommand(cmd)
		case <-ctx.Done():
			return api.Execution{}, ctx.Err()
		}
	}
}

// commandWait bounds the wait for another node's answer: two leases. A dead owner's lease
// expires within one, the next claimer's tick comes within a third of one and its takeover
// writes the terminal record the waiter accepts; an owner that is alive but owns an execution
// it does not run finishes it within one (orphans.go). An owner that is alive and renewing
// but does not answer (stuck, overloaded) is the only one that outlasts the bound.
func (c *Cluster) commandWait() time.Duration { return 2 * c.lease }

// unansweredCommand is the answer to a command nobody answered within commandWait:
// UNAVAILABLE (503, with Retry-After), saying that the command stays posted.
func (c *Cluster) unansweredCommand(cmd store.Command) error {
	return &backend.Error{Code: backend.CodeUnavailable, Message: fmt.Sprintf(
		"Node %s, which runs execution %s, did not answer within %s; the request stays posted to it and runs when it gets to it: retry to learn the outcome",
		cmd.Node, cmd.ExecutionID, c.commandWait())}
}

// postCommand posts cmd and registers for the wake-up of its answer (release hands it back).
func (c *Cluster) postCommand(ctx context.Context, cmd store.Command) (id int64, release func(), err error) {
	id, err = c.store.PostCommand(ctx, cmd)
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, ctx.Err()
		}
		return 0, nil, backend.InternalError("post command", err)
	}
	return id, c.wake.acquire(commandWakeKey(id)), nil
}
