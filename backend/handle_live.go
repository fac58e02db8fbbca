package backend

import (
	"context"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// liveHandle is an execution running (or finishing) in this process.
type liveHandle struct {
	r *Runtime
	x *execution
}

func (h liveHandle) Snapshot(ctx context.Context) (api.Execution, error) {
	if err := h.x.awaitSettled(ctx); err != nil {
		return api.Execution{}, err
	}
	return h.x.snapshot(), nil
}

func (h liveHandle) Events(ctx context.Context, after int64, limit int) ([]Event, error) {
	if err := h.x.awaitSettled(ctx); err != nil {
		return nil, err
	}
	return h.x.readLive(after, limit)
}

func (h liveHandle) Follow() (EventSource, error) { return liveLog(h), nil }

func (h liveHandle) Cancel(ctx context.Context, reason *string) (api.Execution, error) {
	return h.x.cancel(ctx, reason)
}

func (h liveHandle) Respond(ctx context.Context, actionID string, decode func() (api.ActionResponse, error)) (api.Execution, error) {
	return h.x.respond(ctx, actionID, decode)
}

// liveLog is the EventSource of a live execution: its published events, woken by publish.
type liveLog liveHandle

func (l liveLog) Ready(cursor int64) <-chan struct{} {
	x := l.x
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.left != nil || cursor < x.log.Last() || isTerminalState(x.rec.Execution.State) {
		return closedChan
	}
	return x.changed
}

func (l liveLog) Read(cursor int64, max int) ([]Event, bool, error) {
	x := l.x
	x.mu.RLock()
	left := x.left
	terminal := isTerminalState(x.rec.Execution.State)
	x.mu.RUnlock()
	if left != nil {
		return nil, true, left
	}
	events, err := x.readLive(cursor, max)
	return events, terminal, err
}

func (l liveLog) Exhausted(cursor int64) bool {
	x := l.x
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.left == nil && isTerminalState(x.rec.Execution.State) && cursor >= x.log.Last()
}

func (l liveLog) AwaitingAction() bool {
	x := l.x
	x.mu.RLock()
	defer x.mu.RUnlock()
	state := x.rec.Execution.State
	return state == api.ExecutionStateAwaitingApproval || state == api.ExecutionStateAwaitingInput
}

func (l liveLog) Release() {}
