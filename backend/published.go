package backend

import (
	"sync"
	"sync/atomic"

	"github.com/harness-edge/harness-edge/backend/internal/hotwindow"
	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// publishedView is what readers of a live execution see: only what is committed. It is the
// second view of the record beside the writers' (eventWriter.wrec), and it must stay a second
// one: a provider's emissions are submitted without waiting for their group commit (enqueue),
// so the writers' record and sequence run ahead of what is durable, and a reader shown them
// could be contradicted by a crash. rec and log are updated on the store's commit goroutine
// once a change is durable, in submission order (publish.go).
type publishedView struct {
	mu      sync.RWMutex // readers (snapshots, subscriptions waking up together) share it
	rec     store.Execution
	log     hotwindow.Window // the log's end (log.Last) and its newest events, for readers
	changed chan struct{}    // closed and replaced on every append: the wake-up for subscribers
	// left says why this process left the execution (nil while it is here): the runtime closed
	// (ErrClosed) or another node claimed it (fenced: UNAVAILABLE, as for a lapsed lease, since
	// another node serves it). Subscriptions end with it.
	left error
	// settled counts the submitted changes whose commit has ended (durable and published, or
	// failed), in submission order; settledCh is closed and replaced when a settlement comes
	// and someone took it (settleWaited: set by settledWait under mu's read lock, hence
	// atomic; read and cleared by settle under the write lock, so no waiter is missed). See
	// awaitSettled (settled.go).
	settled      int64
	settledCh    chan struct{}
	settleWaited atomic.Bool
}

func newPublishedView(rec store.Execution, log hotwindow.Window) publishedView {
	return publishedView{rec: rec, log: log, changed: make(chan struct{}), settledCh: make(chan struct{})}
}

// snapshot returns a copy of the published (committed) wire object that shares nothing with
// the runtime.
func (v *publishedView) snapshot() api.Execution {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return cloneExecution(v.rec.Execution)
}

// publishedTerminal reports whether readers can already see the execution in a terminal state.
func (v *publishedView) publishedTerminal() bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return isTerminalState(v.rec.Execution.State)
}

// publish updates the view readers see and wakes subscribers. Called on the store's commit
// goroutine once the change is durable.
//
// The wake-up (closing the old channel) comes after v.mu is released: every subscriber it wakes
// starts by taking v.mu for reading (Ready, Read), and woken while publish still held it, each
// would park again on the lock and wait to be woken a second time by Unlock: with 200
// subscribers on 2 cores that second round of scheduling was a third of the fan-out's wake-up
// delay (runtime/trace, scheduler latency profile). No wake-up is lost: a subscriber that takes
// v.mu after the swap sees the new log.Last (Ready returns a closed channel), one that took it
// before holds the old channel, closed just below.
func (v *publishedView) publish(rec *store.Execution, events []Event) {
	v.mu.Lock()
	if rec != nil {
		v.rec = *rec
	}
	if len(events) == 0 {
		v.mu.Unlock()
		return
	}
	v.log.Append(events) // older events than the window keeps are read from the store
	changed := v.changed
	v.changed = make(chan struct{})
	v.mu.Unlock()
	close(changed)
}

// settle records that submission n has settled and wakes awaitSettled (settled.go). Called on
// the store's commit goroutine, in submission order, after the change is published (or failed).
func (v *publishedView) settle(n int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.settled = n
	if v.settleWaited.Swap(false) { // else nobody holds the channel: a new one would be waste
		close(v.settledCh)
		v.settledCh = make(chan struct{})
	}
}

// settledWait reports whether submission target has settled (or this process left the
// execution: nothing more will settle), and otherwise the channel the settlement closes.
func (v *publishedView) settledWait(target int64) (done bool, settled <-chan struct{}) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if v.settled >= target || v.left != nil {
		return true, nil
	}
	v.settleWaited.Store(true)
	return false, v.settledCh
}

// leave records why this process left the execution (the first reason counts) and wakes every
// subscriber for the last time. As in publish, the channel is closed once v.mu is released.
func (v *publishedView) leave(why error) {
	v.mu.Lock()
	if v.left != nil {
		v.mu.Unlock()
		return
	}
	v.left = why
	changed := v.changed
	v.changed = make(chan struct{})
	v.mu.Unlock()
	close(changed)
}
