package backend

import (
	"github.com/harness-edge/harness-edge/backend/store"
)

// Publication: what readers and subscribers of a live execution see, updated only once a
// change is durable, and the hot window of recent events they read from memory.

// readLive returns up to limit published events after the cursor: from memory when they are
// still hot, else from the store (anything older than the hot window was committed long ago).
func (x *execution) readLive(after int64, limit int) ([]Event, error) {
	x.mu.RLock()
	events, fromStore := x.log.Read(after, limit)
	x.mu.RUnlock()
	if fromStore == 0 {
		return events, nil
	}
	// Only up to what was published: the store may already hold a commit still being published.
	return x.rt.readStored(x.id, after, fromStore)
}

// publish updates the view readers see and wakes subscribers. Called on the store's commit
// goroutine once the change is durable.
//
// The wake-up (closing the old channel) comes after x.mu is released: every subscriber it wakes
// starts by taking x.mu for reading (Ready, Read), and woken while publish still held it, each
// would park again on the lock and wait to be woken a second time by Unlock: with 200
// subscribers on 2 cores that second round of scheduling was a third of the fan-out's wake-up
// delay (runtime/trace, scheduler latency profile). No wake-up is lost: a subscriber that takes
// x.mu after the swap sees the new log.Last (Ready returns a closed channel), one that took it
// before holds the old channel, closed just below.
func (x *execution) publish(rec *store.Execution, events []Event) {
	x.mu.Lock()
	if rec != nil {
		x.rec = *rec
	}
	if len(events) == 0 {
		x.mu.Unlock()
		return
	}
	x.log.Append(events) // older events than the window keeps are read from the store
	changed := x.changed
	x.changed = make(chan struct{})
	x.mu.Unlock()
	close(changed)
}

// closeSubscriptions wakes every subscriber for the last time; their next Read reports why
// this process left the execution (ErrClosed on Close; UNAVAILABLE when fenced: another node
// serves it, and a client resumes there). As in publish, the channel is closed once x.mu is
// released.
func (x *execution) closeSubscriptions(why error) {
	x.endSpanLeft() // this process leaves the execution: its span so far is exported
	x.mu.Lock()
	if x.left != nil {
		x.mu.Unlock()
		return
	}
	x.left = why
	changed := x.changed
	x.changed = make(chan struct{})
	x.mu.Unlock()
	close(changed)
}
