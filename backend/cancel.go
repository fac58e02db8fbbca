package backend

import (
	"context"
	"errors"
	"fmt"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// cancel cancels an execution this node runs: for a local caller, or for another node's
// (a cancel command, package cluster).
func (x *execution) cancel(ctx context.Context, reason *string) (api.Execution, error) {
	op, err := x.beginCancel(ctx, reason)
	if err != nil || op == nil {
		return x.snapshot(), err
	}
	select {
	case <-op.done:
		return cloneExecution(op.result), op.err
	case <-ctx.Done():
		return api.Execution{}, ctx.Err()
	}
}

// beginCancel enters cancelling as one unit (state, abandonment of the pending action, abort of
// the provider's context) and starts the operation, or joins the one in flight. nil op: the
// execution is already terminal.
func (x *execution) beginCancel(ctx context.Context, reason *string) (*cancelOperation, error) {
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	return x.beginCancelLocked(ctx, reason)
}

// beginCancelLocked is beginCancel for a caller that holds x.writeMu (a usage report that
// crossed a budget, usagereports.go).
func (x *execution) beginCancelLocked(ctx context.Context, reason *string) (*cancelOperation, error) {
	if isTerminalState(x.state()) {
		return nil, nil
	}
	if x.cancelling != nil {
		return x.cancelling, nil
	}
	if x.isStranded() {
		return x.joinStrandedFailure(), nil
	}
	at := now()
	rec := x.wrec
	rec.Execution.State = api.ExecutionStateCancelling
	rec.Execution.UpdatedAt = at
	// The reason is part of the record, not only of run.cancelled: a snapshot says why a turn
	// ended (an interrupted one names its successor), and an answer to its abandoned action
	// can say so too (actionNotPending).
	rec.Execution.CancelReason = clonePtr(reason)
	c := change{at: at, rec: &rec}
	pending := x.abandonPendingAction(&rec, &c)
	if err := x.commit(c); err != nil {
		if pending != nil {
			x.pending = pending // nothing changed after all
		}
		if x.isStranded() {
			return x.joinStrandedFailure(), nil
		}
		return nil, err
	}
	abortCause := msgExecutionAborted
	if reason != nil && *reason != "" {
		abortCause = *reason
	}
	x.stopRun(errors.New(abortCause))
	pending.reject(msgExecutionAborted)

	op := newCancelOperation()
	op.actor = ActorFrom(ctx)
	x.cancelling = op
	reasonCopy := clonePtr(reason)
	if !x.rt.track(func() { x.finishCancel(op, reasonCopy) }) {
		// Closing: the record stays cancelling and the next Open fails it.
		op.finish(cloneExecution(x.wrec.Execution), ErrClosed)
	}
	return op, nil
}

// joinStrandedFailure is the cancellation of a stranded execution: its provider is already
// stopped and nothing can be committed for it before the store accepts writes again, so the
// operation ends with the failure the stranded loop commits then (stranded.go). The caller
// holds x.writeMu.
func (x *execution) joinStrandedFailure() *cancelOperation {
	op := newCancelOperation()
	x.cancelling = op
	return op
}

// finishCancel calls the provider's cleanup hook (outside every lock, bounded by CancelTimeout)
// and then enters cancelled with run.cancelled as one unit.
func (x *execution) finishCancel(op *cancelOperation, reason *string) {
	cleanupErr := x.runCleanupHook(reason)

	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	if x.isStranded() {
		return // the stranded loop fails it and settles op (already, if it is terminal)
	}
	at := now()
	rec := x.wrec
	rec.Execution.State = api.ExecutionStateCancelled
	rec.Execution.EndedAt = &at
	rec.Execution.UpdatedAt = at
	data := map[string]any{}
	putActor(data, op.actor)
	if reason != nil {
		data["reason"] = *reason
	}
	if cleanupErr != "" {
		data["providerCleanupError"] = cleanupErr
	}
	err := x.commit(change{
		at:     at,
		rec:    &rec,
		events: []newEvent{{typ: api.StandardEventTypeRunCancelled, data: mustData(data)}},
	})
	if err != nil {
		if x.isStranded() {
			return // the stranded loop fails it and settles op
		}
		x.rt.log.Error("finalize cancellation", "execution", x.id, "err", err)
		op.finish(cloneExecution(x.wrec.Execution), err)
		return
	}
	x.finished()
	op.finish(cloneExecution(x.wrec.Execution), nil)
}

// runCleanupHook calls Canceler.Cancel exactly once and returns the providerCleanupError text
// ("" when cleanup succeeded or the provider has no hook). The wait is bounded: a hook that does
// not return within CancelTimeout is reported as such and left to finish on its own.
func (x *execution) runCleanupHook(reason *string) string {
	hook, ok := x.provider.(Canceler)
	if !ok {
		return ""
	}
	reasonText := ""
	if reason != nil {
		reasonText = *reason
	}
	ctx, cancel := context.WithTimeout(x.spanContext(), x.rt.opts.CancelTimeout) // the execution's trace
	defer cancel()
	result := make(chan error, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				result <- fmt.Errorf("Provider cleanup panicked: %v", v)
			}
		}()
		result <- hook.Cancel(ctx, x.id, reasonText)
	}()
	select {
	case err := <-result:
		if err == nil {
			return ""
		}
		if msg := err.Error(); msg != "" {
			return msg
		}
		return msgCleanupFailed
	case <-ctx.Done():
		return fmt.Sprintf(msgCleanupTimedOut, x.rt.opts.CancelTimeout)
	}
}
