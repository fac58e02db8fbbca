package backend

import (
	"context"
	"errors"
	"sync"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// runControl is a live execution's lifecycle outside its record: the context its provider runs
// in, the settling of its start, and its cancellation in flight.
type runControl struct {
	runCtx  context.Context // given to the provider; cancelled on cancellation, failure or Close
	stopRun context.CancelCauseFunc
	// admitted is closed once the start is settled: the queued record committed and the
	// execution in the live map, or the start failed. The provider may run before that (its
	// changes are queued behind the record), but the execution only finishes after it.
	admitted   chan struct{}
	cancelling *cancelOperation // writeMu held
}

func newRunControl(parent context.Context) runControl {
	ctx, stop := context.WithCancelCause(parent)
	return runControl{runCtx: ctx, stopRun: stop, admitted: make(chan struct{})}
}

// errLeaseLost is the cause of the provider contexts of the executions a node ran under a lease
// epoch another node claimed: they are that node's now, and this one commits nothing for them.
var errLeaseLost = errors.New("this node's lease was taken over by another node")

// leaseLost reports whether the execution was stopped by a fence: nothing more may be
// committed for it.
func (c *runControl) leaseLost() bool {
	return errors.Is(context.Cause(c.runCtx), errLeaseLost)
}

// cancelOperation is the single flight of one execution's cancellation: the first caller starts
// it, everyone (the first caller included) waits for done and gets the same result.
type cancelOperation struct {
	done   chan struct{}
	once   sync.Once
	result api.Execution
	err    error
	actor  *api.Actor // who started it (actor.go); nil when nobody was named
}

func newCancelOperation() *cancelOperation { return &cancelOperation{done: make(chan struct{})} }

// finish settles the operation; only the first call counts (the cancellation's own end, or the
// failure of a stranded execution, whichever comes first).
func (op *cancelOperation) finish(result api.Execution, err error) {
	op.once.Do(func() {
		op.result, op.err = result, err
		close(op.done)
	})
}
