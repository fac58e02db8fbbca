// Package streams serves the conversation and tenant streams (docs/protocol.md, "Conversation
// and tenant streams"): every committed event of a scope, in the order the store numbered
// them (store.StreamLog), from a cursor, then live.
//
// The Hub keeps the newest stretch of the log in memory, shared by every subscriber: a ring of
// entries that the store's commit observer appends to (a single-node store: every commit, in
// order) and, on a store shared by several nodes, a pump that reads what other nodes committed
// when the store's notices say so (or its poll finds it). A Subscription is a cursor and a
// filter: it reads the ring when its cursor is in it, the store (in pages) when it is older,
// and waits on a wake-up channel of its topic otherwise. So a subscriber holds no buffer of its
// own — a slow one falls behind the ring and reads the store from its cursor, which is exactly
// where it would resume after a disconnect — and a writer's cost is the same whatever the
// number of subscribers: an append to the ring and the close of the channels of the topics its
// entries touch.
//
// Mercure's hand-off (register, note the high-water mark under the publishing lock, replay up
// to it, flush what queued, go live) is what the cursor does here without a queue: the ring
// covers the positions (base, head] without a gap, so "after the cursor" is read from the
// store while the cursor is at or below base and from the ring after that; an entry is in the
// store before it is in the ring, so no read can skip one.
package streams

import (
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/harness-edge/harness-edge/backend/internal/loops"
	"github.com/harness-edge/harness-edge/backend/store"
)

// ErrClosed ends the subscriptions of a hub that closed (the runtime is closing).
var ErrClosed = errors.New("streams: the hub is closed")

// ErrEnded ends the subscriptions open when EndStreams was called: the node may no longer
// vouch for what it serves, and clients resume elsewhere from their cursors.
var ErrEnded = errors.New("streams: the node ended its open streams")

// Options tune a Hub.
type Options struct {
	// RingEntries and RingBytes bound the entries kept in memory (defaults 16,384 and 16 MiB).
	RingEntries int
	RingBytes   int
	// Watch, on a store shared by several nodes, delivers wake-ups from other nodes' commits
	// (store.Cluster.Watch); nil on a single-node store, where the observer sees every commit.
	Watch func(func(store.Notice)) (stop func())
	// Poll is how often the pump looks at the store without a notice (a missed notice delays,
	// never loses); default 1 s. Only with Watch.
	Poll time.Duration
	// Retention is how long entries stay in the store's log (0: forever); the hub trims it
	// every Retention/2 (at most hourly).
	Retention time.Duration
	// OnError is told of errors no caller sees (the pump's reads, trimming).
	OnError func(error)
	// Lapsed, on a cluster, is the channel closed while this node can no longer vouch for its
	// lease (a fresh one is handed out once it can again): the streams open then end, as the
	// node's execution streams do, and new ones are refused with ErrEnded until it vouches
	// again. Nil: never.
	Lapsed func() <-chan struct{}
	// OnErased is told of each erasure's marker (store.LogEntry.Erased) as it reaches the
	// ring — from this node's commit or, on a shared store, from another node's through the
	// pump — before any subscriber can read the marker, so that what the runtime keeps of the
	// conversation in memory is gone by the time a reader learns of the deletion. Called with
	// the hub's lock held: quick, and never calls back into the hub. Nil: nothing.
	OnErased func(store.Tombstone)
}

// Hub is the runtime's room for the conversation and tenant streams.
type Hub struct {
	log   store.StreamLog
	opts  Options
	loops loops.Group

	mu sync.RWMutex
	// The ring: ring[i] for i in [0, n) at buf[(start+i)%len(buf)], positions increasing. It
	// holds every committed entry in (base, head]; head == base when it is empty.
	buf        []store.LogEntry
	start, n   int
	bytes      int
	base, head int64
	// waiting maps a topic to the channel its subscribers wait on; an append closes the
	// channels of the topics it touches and forgets them (the next Ready makes a new one). Its
	// own lock, taken after mu (read or write): Ready holds mu for reading only.
	wmu     sync.Mutex
	waiting map[topic]chan struct{}
	// ended is closed by EndStreams (and replaced) and by Close: subscriptions taken before
	// see it and end.
	ended  chan struct{}
	closed bool

	poke chan struct{} // wakes the pump (shared stores)
}

// New makes the hub of log and starts its loops (the pump on a shared store, trimming).
func New(log store.StreamLog, opts Options) (*Hub, error) {
	if opts.RingEntries <= 0 {
		opts.RingEntries = 16384
	}
	if opts.RingBytes <= 0 {
		opts.RingBytes = 16 << 20
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.OnError == nil {
		opts.OnError = func(error) {}
	}
	bounds, err := log.StreamLogBounds()
	if err != nil {
		return nil, err
	}
	h := &Hub{
		log: log, opts: opts,
		buf:     make([]store.LogEntry, min(opts.RingEntries, initialRing)),
		base:    bounds.Last,
		head:    bounds.Last,
		waiting: map[topic]chan struct{}{},
		ended:   make(chan struct{}),
		poke:    make(chan struct{}, 1),
	}
	log.ObserveLog(h.observe)
	if opts.Watch != nil {
		stop := opts.Watch(func(n store.Notice) {
			if n.Kind == store.NoticeEvents {
				h.wakePump()
			}
		})
		h.loops.Go("stream log pump", func(quit <-chan struct{}) {
			defer stop()
			h.pumpLoop(quit)
		})
	}
	if opts.Retention > 0 {
		h.loops.Go("stream log trim", h.trimLoop)
	}
	if opts.Lapsed != nil {
		h.loops.Go("stream lease lapse", h.lapseLoop)
	}
	return h, nil
}

// lapsed reports whether the node cannot vouch for its lease now.
func (h *Hub) lapsed() bool {
	if h.opts.Lapsed == nil {
		return false
	}
	select {
	case <-h.opts.Lapsed():
		return true
	default:
		return false
	}
}

// lapseLoop ends the open streams at each lapse of the node's lease, then waits for the node
// to vouch again (a fresh channel) before it watches for the next lapse.
func (h *Hub) lapseLoop(quit <-chan struct{}) {
	for {
		lapse := h.opts.Lapsed()
		select {
		case <-quit:
			return
		case <-lapse:
		}
		h.EndStreams()
		for again := time.NewTicker(100 * time.Millisecond); ; {
			select {
			case <-quit:
				again.Stop()
				return
			case <-again.C:
			}
			if !h.lapsed() {
				again.Stop()
				break
			}
		}
	}
}

// LogID is the identity of the store's log (cursors carry a tag derived from it).
func (h *Hub) LogID() string { return h.log.StreamLogID() }

// Log is the store's log, for reads that need no subscription (the JSON replay).
func (h *Hub) Log() store.StreamLog { return h.log }

// Close ends every subscription and stops the hub's loops; the store stays open.
func (h *Hub) Close() {
	h.log.ObserveLog(nil)
	h.loops.Stop()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	close(h.ended)
	h.wakeAllLocked()
}

// wakeAllLocked wakes every waiting subscriber (the hub holds mu).
func (h *Hub) wakeAllLocked() {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	for t, ch := range h.waiting {
		close(ch)
		delete(h.waiting, t)
	}
}

// EndStreams ends the subscriptions open now (their next Read fails with ErrEnded); later
// subscriptions are served as usual. It is the same signal that ends a node's execution
// streams when the node can no longer vouch for its lease: a client resumes from its cursor,
// on this node once it can vouch again or on another.
func (h *Hub) EndStreams() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	close(h.ended)
	h.ended = make(chan struct{})
	h.wakeAllLocked()
}

// observe is the store's commit observer: it appends the entries when they follow the ring's
// head (every commit on a single-node store), else wakes the pump to read what came between
// from the store (another node's commits).
func (h *Hub) observe(entries []store.LogEntry) {
	if len(entries) == 0 {
		return
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	// What the pump already read is skipped.
	i := sort.Search(len(entries), func(i int) bool { return entries[i].Position > h.head })
	entries = entries[i:]
	if len(entries) == 0 {
		h.mu.Unlock()
		return
	}
	if entries[0].Position != h.head+1 {
		h.mu.Unlock()
		h.wakePump()
		return
	}
	h.appendLocked(entries, entries[len(entries)-1].Position)
	h.mu.Unlock()
}

// appendLocked adds entries (positions increasing, all after head) and makes reached the new
// head: the entries and every position up to reached are known committed. It evicts the oldest
// entries past the ring's bounds and wakes the topics the entries touch.
func (h *Hub) appendLocked(entries []store.LogEntry, reached int64) {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	for i := range entries {
		e := &entries[i]
		if e.Erased != nil {
			// The conversation's entries leave the ring with it (the store deleted them in
			// the marker's transaction): no reader, here or behind, meets them again.
			h.dropConversationLocked(e.Scope)
			if h.opts.OnErased != nil {
				h.opts.OnErased(*e.Erased)
			}
		}
		if h.n == len(h.buf) && len(h.buf) < h.opts.RingEntries {
			h.growLocked()
		}
		if h.n == len(h.buf) || h.bytes+len(e.Event.JSON) > h.opts.RingBytes && h.n > 0 {
			h.evictLocked()
		}
		h.buf[(h.start+h.n)%len(h.buf)] = *e
		h.n++
		h.bytes += len(e.Event.JSON)
		h.wakeLocked(topic{kind: topicConversation, key: e.Scope.ConversationID})
		h.wakeLocked(topic{kind: topicTenant, key: e.Scope.Tenant})
		if Lifecycle(e.Event.Type) || e.Erased != nil {
			h.wakeLocked(topic{kind: topicTenantLifecycle, key: e.Scope.Tenant})
		}
	}
	if reached > h.head {
		h.head = reached
	}
	if h.n == 0 {
		h.base = h.head // nothing kept: the ring covers nothing before head
	}
}

// initialRing is the ring's first size: it doubles up to RingEntries as entries come, so an
// idle runtime does not hold the whole ring.
const initialRing = 256

// growLocked doubles the ring (up to RingEntries), keeping its entries in order.
func (h *Hub) growLocked() {
	grown := make([]store.LogEntry, min(2*len(h.buf), h.opts.RingEntries))
	for i := range h.n {
		grown[i] = h.buf[(h.start+i)%len(h.buf)]
	}
	h.buf, h.start = grown, 0
}

// dropConversationLocked removes the entries of the conversation of scope from the ring,
// keeping the others in order (the hub holds mu and wmu). Positions may have holes afterwards,
// as a trimmed log has: readers go by position, not by index.
func (h *Hub) dropConversationLocked(scope store.StreamScope) {
	kept := 0
	for i := range h.n {
		e := h.buf[(h.start+i)%len(h.buf)]
		if e.Erased == nil && e.Scope.Tenant == scope.Tenant && e.Scope.ConversationID == scope.ConversationID {
			h.bytes -= len(e.Event.JSON)
			continue
		}
		h.buf[(h.start+kept)%len(h.buf)] = e
		kept++
	}
	for i := kept; i < h.n; i++ {
		h.buf[(h.start+i)%len(h.buf)] = store.LogEntry{}
	}
	h.n = kept
}

func (h *Hub) evictLocked() {
	old := &h.buf[h.start]
	h.base = old.Position
	h.bytes -= len(old.Event.JSON)
	*old = store.LogEntry{}
	h.start = (h.start + 1) % len(h.buf)
	h.n--
}

// wakeLocked wakes the subscribers waiting on t (the hub holds mu for writing, and wmu).
func (h *Hub) wakeLocked(t topic) {
	if len(h.waiting) == 0 {
		return
	}
	if ch, ok := h.waiting[t]; ok {
		close(ch)
		delete(h.waiting, t)
	}
}
