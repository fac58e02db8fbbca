package conversation

import (
	"context"
	"sync"
	"time"
)

// Executions is what waiting for a turn needs of the runtime: the end of an execution, and its
// cancellation, wherever the execution runs (this node, or another one sharing the store).
type Executions interface {
	// AwaitEnd returns nil once execution id is terminal (or gone: only terminal executions are
	// ever deleted), ctx.Err() when ctx ends first, and another error when it cannot tell now
	// (a store that does not answer): AwaitTurn asks again.
	AwaitEnd(ctx context.Context, id string) error
	// Cancel cancels execution id with reason, as the protocol's :cancel does, and returns once
	// it is terminal. An execution already terminal is left as it is.
	Cancel(ctx context.Context, id, reason string) error
	// Warn reports what could not be done and will be tried again (slog-style key-value args).
	Warn(msg string, args ...any)
}

// retryAfter is the pause before AwaitEnd is asked again after an error.
const retryAfter = 500 * time.Millisecond

// AwaitTurn waits until every execution of waitingFor (what the store found not terminal when
// self was accepted) is terminal, whatever its outcome: a cancelled or failed predecessor does
// not block self. With interrupt, each of them is first cancelled with InterruptReason(self)
// (concurrently: a cancellation returns only once the provider cleaned up). It returns nil when
// it is self's turn, and ctx.Err() when ctx ends first (self was cancelled while waiting, or
// the runtime is closing: self keeps waiting in the store, and the next owner waits again).
func AwaitTurn(ctx context.Context, ex Executions, self string, waitingFor []string, interrupt bool) error {
	var cancels sync.WaitGroup
	defer cancels.Wait() // nothing outlives the call
	if interrupt {
		reason := InterruptReason(self)
		for _, id := range waitingFor {
			cancels.Go(func() {
				if err := ex.Cancel(ctx, id, reason); err != nil && ctx.Err() == nil {
					ex.Warn("interrupt an execution", "execution", self, "interrupted", id, "err", err)
				}
			})
		}
	}
	for _, id := range waitingFor {
		for {
			err := ex.AwaitEnd(ctx, id)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			ex.Warn("wait for a turn", "execution", self, "waiting for", id, "err", err)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(retryAfter):
			}
		}
	}
	return nil
}
