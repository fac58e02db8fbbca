package backend

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/harness-edge/harness-edge/backend/internal/hotwindow"

	"github.com/harness-edge/harness-edge/backend/conversation"
	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The runtime's side of a conversation's busy policy (package conversation; docs/protocol.md
// "Busy conversations"). A start under reject, enqueue or interrupt carries a store.Turn: the
// store checks the conversation's other executions in the commit that creates this one, and
// either refuses it (CONVERSATION_BUSY) or records what it waits for (waitingFor). Such an
// execution's goroutine is runTurn: it waits for its turn through the handles every operation
// uses (conversation.AwaitTurn, turnDesk below), then commits run.started, and only then
// calls its provider, so an execution that never got its turn provably never ran. A restart or
// a takeover finds it waiting (waitsForTurn) and lets it wait on, instead of failing it.

// CodeConversationBusy (409) is an extension: a start under the reject policy while another
// execution of its conversation is not terminal.
const CodeConversationBusy = api.ErrorCodeCONVERSATIONBUSY

// errConversationBusy is the answer to a rejected start: the conversation and its executions
// that were not terminal, in arrival order.
func errConversationBusy(busy *store.BusyError) *Error {
	ids := make([]any, len(busy.ExecutionIDs))
	for i, id := range busy.ExecutionIDs {
		ids[i] = id
	}
	e := newError(CodeConversationBusy, "Conversation %s is busy: an execution of it has not ended", busy.ConversationID)
	e.Details = api.JSONObject{"conversationId": busy.ConversationID, "executionIds": ids}
	return e
}

// startTurn is the store precondition of a start under policy, nil for parallel on a
// conversation without a policy (which costs nothing more than a portable start). A parallel
// start on a conversation that has a policy is a Parallel turn: it checks nothing, but on
// PostgreSQL it takes the conversation's lock, so the conversation's own turns on other nodes
// never miss it. The execution record remembers a policy that queues or rejects: a restart or
// a takeover must know that a queued execution waits for its turn.
func startTurn(rec *store.Execution, policy api.BusyPolicy, convPolicy *api.BusyPolicy) *store.Turn {
	plan := conversation.PlanFor(policy)
	if !plan.Turn {
		if convPolicy == nil || *convPolicy == conversation.Parallel {
			return nil
		}
		return &store.Turn{ConversationID: rec.Execution.ConversationID, ExecutionID: rec.Execution.ID, Parallel: true}
	}
	rec.BusyPolicy = string(policy)
	return &store.Turn{ConversationID: rec.Execution.ConversationID, ExecutionID: rec.Execution.ID, Reject: plan.Reject}
}

// waitsForTurn reports whether rec is an execution that waits for its turn (or got it and did
// not start yet): started under a policy that queues, still queued. Nothing but run.queued is
// in its log (run.started is committed with the state running), so its provider never ran and
// it can wait on, on the node that owns it now, if that node has its provider (registered).
func waitsForTurn(rec store.Execution, registered func(providerID string) bool) bool {
	if rec.BusyPolicy == "" || rec.Execution.State != api.ExecutionStateQueued {
		return false
	}
	return registered(rec.Execution.ProviderID)
}

// runTurn is the goroutine of an execution started under a policy that queues: its turn, then
// its run. It returns without a change when the execution's context ends while it waits:
// cancelled (the cancellation finishes it), or this runtime closing or fenced (the execution
// stays queued in the store, waiting, for whoever owns it next).
func (x *execution) runTurn(waitingFor []string, interrupt bool, actor *api.Actor) {
	select {
	case <-x.rt.resumed: // after a restart, every execution is back before any waits (Open)
	case <-x.runCtx.Done():
		return
	}
	if x.rt.beforeRun != nil {
		<-x.admitted
		x.rt.beforeRun(x.id)
	}
	if len(waitingFor) > 0 {
		ctx := x.runCtx
		if actor != nil {
			ctx = WithActor(ctx, actor.ID) // who interrupts: the caller of the newer start
		}
		if conversation.AwaitTurn(ctx, turnDesk{x.rt}, x.id, waitingFor, interrupt) != nil {
			return
		}
	}
	// Committed before the provider is called: what a provider does is never lost to a crash
	// that would leave its execution waiting for a turn it already had.
	if !x.startRun(true) {
		return
	}
	run := &Run{rt: x.rt, x: x, config: deepCopyObject(x.config)}
	result, err := x.callProvider(run)
	x.finishRun(result, err)
}

// committedWaitingFor is what the store found the new execution waits for, from its committed
// record (the commit of a turn publishes it); the writers' view takes it too, so that nothing
// written before its turn comes drops it.
func (x *execution) committedWaitingFor() []string {
	x.mu.RLock()
	waitingFor := slices.Clone(x.rec.Execution.WaitingFor)
	x.mu.RUnlock()
	x.writeMu.Lock()
	if x.state() == api.ExecutionStateQueued {
		x.wrec.Execution.WaitingFor = slices.Clone(waitingFor)
	}
	x.writeMu.Unlock()
	return waitingFor
}

// turnDesk is the runtime's side of turns that is not one execution's: making an execution
// that waits for its turn live here again after a restart or a takeover (waitsForTurn found
// it), and the runtime as conversation.AwaitTurn sees it (the executions a turn waits for).
// Every tenant's executions are reachable: the ones a turn waits for were found by the store in
// its own conversation.
type turnDesk struct{ r *Runtime }

// resumeTurn makes rec, an execution waiting for its turn that a restart or a takeover found,
// live here and lets it wait on.
func (t turnDesk) resumeTurn(rec store.Execution) error {
	r := t.r
	reg, ok := r.provider(rec.Execution.ProviderID)
	if !ok {
		return fmt.Errorf("resume %s: provider %s is not registered", rec.Execution.ID, rec.Execution.ProviderID)
	}
	last, err := r.store.LastSequence(rec.Execution.ID) // 1: run.queued, and nothing else
	if err != nil {
		return fmt.Errorf("resume %s: last sequence: %w", rec.Execution.ID, err)
	}
	x := newExecution(r, rec, reg.provider)
	x.attachSpan(r.spans.resume(rec))
	x.nextSeq = last
	x.log = hotwindow.New(r.hotWindow, last)
	r.live.put(x)
	close(x.admitted)
	interrupt := conversation.PlanFor(api.BusyPolicy(rec.BusyPolicy)).Interrupt
	waitingFor := rec.Execution.WaitingFor
	r.track(func() { x.runTurn(waitingFor, interrupt, nil) })
	r.log.Info("an execution waits for its turn again", "execution", rec.Execution.ID, "waiting for", len(waitingFor))
	return nil
}

func anyTenant(string) bool { return true }

// AwaitEnd follows execution id through its handle until its log is complete: live here, or
// another node's through the cluster's tail. The subscription starts past any sequence, so it
// reads no event: only the end of the log wakes it for good.
func (t turnDesk) AwaitEnd(ctx context.Context, id string) error {
	h, err := t.r.locateFor(id, anyTenant)
	if ErrorCode(err) == CodeNotFound {
		return nil // deleted: retention deletes terminal executions only
	}
	if err != nil {
		return err
	}
	src, err := h.Follow()
	if err != nil {
		return err
	}
	sub := &Subscription{src: src, cursor: math.MaxInt64}
	defer sub.Close()
	for {
		ready := sub.Ready()
		_, done, err := sub.Read(1)
		switch {
		case errors.Is(err, ErrClosed):
			return err
		case done:
			return nil
		case err != nil:
			return err
		}
		select {
		case <-ready:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Cancel is the protocol's :cancel of execution id (a command to its owner when another node
// runs it), with ctx's actor.
func (t turnDesk) Cancel(ctx context.Context, id, reason string) error {
	h, err := t.r.locateFor(id, anyTenant)
	if ErrorCode(err) == CodeNotFound {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = h.Cancel(ctx, &reason)
	return err
}

func (t turnDesk) Warn(msg string, args ...any) { t.r.log.Warn(msg, args...) }
