package cluster

import (
	"sync"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/internal/hotwindow"
)

// Event is an event as the runtime keeps it.
type Event = backend.Event

// remoteTail follows, on this node, the log of an execution another node owns: the one reader
// of the store that every subscription of this node to that execution shares. Woken by the
// owner's commit notices (and by the poll when a notice is missed), it reads the committed
// events after the last one it has and keeps the most recent in memory, so a wake-up costs one
// query per node, not one per subscriber. It ends itself once it has read the terminal event.
// Only committed rows are ever read, so nothing a subscriber sees can be taken back.
type remoteTail struct {
	c    *Cluster
	id   string
	refs int // subscriptions using it; guarded by tails.mu

	mu sync.RWMutex
	// log is what the tail read: its last event (log.Last; every event up to it is committed)
	// and the most recent events.
	log      hotwindow.Window
	terminal bool          // the event at log.Last is terminal: the log is complete
	closed   bool          // the runtime closed; subscriptions end with ErrClosed
	changed  chan struct{} // closed and replaced when log.Last moves, terminal or closed is set
	stopRead chan struct{} // closed when the last subscription left
}

// tails is the registry of this node's tails, by execution id.
type tails struct {
	mu     sync.Mutex
	byID   map[string]*remoteTail
	closed bool // the runtime is closing: no new tail
}

// tailPage bounds one read of a tail; a busy log is read in several pages.
const tailPage = 1024

// acquireTail returns the tail of execution id, starting it if this node has none, positioned
// at the execution's current last event (older events are read from the store by each
// subscription, like the older events of a live execution).
func (c *Cluster) acquireTail(id string) (*remoteTail, error) {
	ts := &c.tails
	if t := ts.join(id); t != nil {
		return t, nil
	}
	// Read outside the lock: subscriptions to other executions do not wait for it.
	last, err := c.host.Store().LastSequence(id)
	if err != nil {
		return nil, backend.InternalError("read last sequence", err)
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.closed {
		return nil, backend.ErrClosed
	}
	if t := ts.byID[id]; t != nil { // started meanwhile by another subscription
		t.refs++
		return t, nil
	}
	// The tail starts one event back: its first read tells whether the last committed event is
	// already the terminal one (the record the caller read may predate it).
	start := max(last, 1)
	t := &remoteTail{
		c:        c,
		id:       id,
		refs:     1,
		log:      hotwindow.New(c.host.HotWindow(), start-1),
		changed:  make(chan struct{}),
		stopRead: make(chan struct{}),
	}
	if ts.byID == nil {
		ts.byID = make(map[string]*remoteTail)
	}
	ts.byID[id] = t
	release := c.wake.acquire(executionWakeKey(id))
	if !c.loops.Go("cluster-tail", func(<-chan struct{}) {
		defer release()
		t.follow()
	}) { // not reached: closeTails (ts.closed) comes before the loops stop
		delete(ts.byID, id)
		release()
		return nil, backend.ErrClosed
	}
	return t, nil
}

// join takes a reference to the tail of id when there is one.
func (ts *tails) join(id string) *remoteTail {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.byID[id]
	if t != nil {
		t.refs++
	}
	return t
}

// releaseTail drops one subscription's reference; the last one stops the tail.
func (c *Cluster) releaseTail(t *remoteTail) {
	ts := &c.tails
	ts.mu.Lock()
	t.refs--
	last := t.refs == 0
	if last {
		delete(ts.byID, t.id)
	}
	ts.mu.Unlock()
	if last {
		close(t.stopRead)
	}
}

// closeTails ends every tail (Close): their subscriptions report ErrClosed.
func (c *Cluster) closeTails() {
	ts := &c.tails
	ts.mu.Lock()
	ts.closed = true
	tails := make([]*remoteTail, 0, len(ts.byID))
	for _, t := range ts.byID {
		tails = append(tails, t)
	}
	ts.mu.Unlock()
	for _, t := range tails {
		t.mu.Lock()
		if !t.closed {
			t.closed = true
			t.signalLocked()
		}
		t.mu.Unlock()
	}
}

// follow reads new events whenever the execution's key is woken, until the terminal event is
// read, the last subscription left, or the runtime closes.
func (t *remoteTail) follow() {
	c := t.c
	for {
		woken := c.wake.channel(executionWakeKey(t.id))
		if t.readNew() {
			return
		}
		select {
		case <-woken:
		case <-t.stopRead:
			return
		case <-c.stopping():
			return
		}
	}
}

// readNew reads every committed event after log.Last; true once the log is complete. A store
// error is logged and retried at the next wake-up (the poll brings one).
func (t *remoteTail) readNew() bool {
	for {
		t.mu.RLock()
		after := t.log.Last()
		t.mu.RUnlock()
		events, err := t.c.host.Store().Events(t.id, after, tailPage)
		if err != nil {
			t.c.storeErrors.Error("read the events of an execution another node runs", err, "execution", t.id)
			return false
		}
		if len(events) == 0 {
			return false
		}
		if t.append(events) {
			return true
		}
		if len(events) < tailPage {
			return false
		}
	}
}

// append publishes events read after log.Last; true when the terminal one is among them.
func (t *remoteTail) append(events []Event) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, next := 0, t.log.Last()+1
	for _, e := range events {
		if e.Sequence != next {
			break // never happens with a store that keeps the contract; never skip a sequence
		}
		n++
		next++
		if e.Terminal() {
			t.terminal = true
			break
		}
	}
	t.log.Append(events[:n])
	t.signalLocked()
	return t.terminal
}

func (t *remoteTail) signalLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// Ready is closed when a subscription at cursor has something to read (backend.EventSource).
func (t *remoteTail) Ready(cursor int64) <-chan struct{} {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed || t.terminal || cursor < t.log.Last() {
		return closed
	}
	return t.changed
}

// Read returns up to limit events after cursor (limit <= 0: all read so far), whether the log
// is complete as of before the read, and ErrClosed once the runtime closed
// (backend.EventSource).
func (t *remoteTail) Read(cursor int64, limit int) ([]Event, bool, error) {
	t.mu.RLock()
	if t.closed {
		t.mu.RUnlock()
		return nil, true, backend.ErrClosed
	}
	terminal := t.terminal
	events, fromStore := t.log.Read(cursor, limit)
	t.mu.RUnlock()
	if fromStore == 0 {
		return events, terminal, nil
	}
	// Older than what the tail keeps: from the store, up to what the tail has read (committed).
	// Through the host, which reports a damaged event once, as a local read does.
	events, err := t.c.host.StoredEvents(t.id, cursor, fromStore)
	if err != nil {
		return nil, false, err
	}
	return events, terminal, nil
}

// Exhausted: a tail is never reported exhausted; its stream ends by itself.
func (t *remoteTail) Exhausted(int64) bool { return false }

// AwaitingAction: a tail does not follow the record's state.
func (t *remoteTail) AwaitingAction() bool { return false }

// Release hands one subscription's reference back; the last one stops the tail.
func (t *remoteTail) Release() { t.c.releaseTail(t) }

// pollLoop is the fallback for missed notices: every interval it wakes every key nobody woke
// for that long (tails re-read the store, command waiters re-check their answer).
func (c *Cluster) pollLoop(stop <-chan struct{}) {
	interval := c.poll
	ticker := time.NewTicker(interval / 2)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
			c.wake.wakeQuiet(interval)
		case <-stop:
			return
		}
	}
}
