package streams

import (
	"errors"
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/harness-edge/harness-edge/backend/store"
)

// closedChan is what Ready returns when Read has something at once.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// maxRingScan bounds the ring entries one Read examines, so that a narrow filter does not hold
// the ring's read lock over its whole length.
const maxRingScan = 4096

// Subscription follows the log from a cursor with a filter. It holds no goroutine and no
// buffer: the caller waits on Ready and drains with Read, which read the hub's ring or, for a
// cursor older than the ring, the store. Ready and Read are for one goroutine; Close may come
// from any.
type Subscription struct {
	hub    *Hub
	filter Filter
	topic  topic
	cursor int64
	ended  chan struct{} // the hub's at subscription: closed by EndStreams and Close
	closed atomic.Bool
}

// ExpiredError says the cursor is older than what the log keeps (store.ErrCursorExpired).
type ExpiredError struct {
	After  int64 // the position asked for
	Oldest int64 // the first position kept: a stream can resume after Oldest-1
}

func (e *ExpiredError) Error() string {
	return fmt.Sprintf("the stream log no longer holds what follows position %d (the oldest kept is %d)", e.After, e.Oldest)
}

func (e *ExpiredError) Unwrap() error { return store.ErrCursorExpired }

// Bounds are the log's ends now (the store's).
func (h *Hub) Bounds() (store.LogBounds, error) { return h.log.StreamLogBounds() }

// CheckCursor fails with an *ExpiredError when after is older than what the log keeps.
func (h *Hub) CheckCursor(after int64) error {
	b, err := h.Bounds()
	if err != nil {
		return err
	}
	if after < b.Oldest-1 {
		return &ExpiredError{After: after, Oldest: b.Oldest}
	}
	return nil
}

// Subscribe follows the entries f selects after position after. It does not check the
// cursor's age (CheckCursor): a Read that meets the log's trimmed end fails with an
// *ExpiredError. While the node cannot vouch for its lease (Options.Lapsed) it fails with
// ErrEnded.
func (h *Hub) Subscribe(f Filter, after int64) (*Subscription, error) {
	if h.lapsed() {
		return nil, ErrEnded
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return nil, ErrClosed
	}
	return &Subscription{hub: h, filter: f, topic: f.topic(), cursor: after, ended: h.ended}, nil
}

// Cursor is the position the subscription has read up to (examined, not only returned).
func (s *Subscription) Cursor() int64 { return s.cursor }

// Close ends the subscription; later Reads fail with ErrClosed.
func (s *Subscription) Close() { s.closed.Store(true) }

// Ended is closed when the hub ends the subscription (EndStreams, Close).
func (s *Subscription) Ended() <-chan struct{} { return s.ended }

// Ready is closed when Read may have something: entries after the cursor, or the end. Take it
// before Read, so that an append between the two is not missed.
func (s *Subscription) Ready() <-chan struct{} {
	if s.closed.Load() {
		return closedChan
	}
	h := s.hub
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed || s.cursor < h.head {
		return closedChan // (the ring or the store has entries after the cursor)
	}
	select {
	case <-s.ended:
		return closedChan
	default:
	}
	h.wmu.Lock()
	defer h.wmu.Unlock()
	ch, ok := h.waiting[s.topic]
	if !ok {
		ch = make(chan struct{})
		h.waiting[s.topic] = ch
	}
	return ch
}

// Read returns up to max entries after the cursor that the filter selects, without blocking,
// and moves the cursor past what it examined. Nothing returned with a nil error: wait on Ready.
func (s *Subscription) Read(max int) ([]store.LogEntry, error) { return s.ReadAppend(nil, max) }

// ReadAppend is Read appending to dst: a stream that reads batch after batch reuses one slice
// instead of allocating one per batch (an allocation per subscriber per commit, a sixth of the
// server's CPU with 1,200 subscribers).
func (s *Subscription) ReadAppend(dst []store.LogEntry, max int) ([]store.LogEntry, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	select {
	case <-s.ended:
		if s.hub.isClosed() {
			return nil, ErrClosed
		}
		return nil, ErrEnded
	default:
	}
	if max <= 0 {
		max = store.DefaultLogPage
	}
	if out, ok := s.readRing(dst, max); ok {
		return out, nil
	}
	page, err := s.hub.log.ReadLog(s.filter.query(s.cursor, max))
	if errors.Is(err, store.ErrCursorExpired) {
		b, berr := s.hub.Bounds()
		if berr != nil {
			return nil, berr
		}
		return nil, &ExpiredError{After: s.cursor, Oldest: b.Oldest}
	}
	if err != nil {
		return nil, err
	}
	s.cursor = max64(s.cursor, page.Reached)
	return append(dst, page.Entries...), nil
}

func (h *Hub) isClosed() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.closed
}

// readRing appends to out from the ring when the cursor is in it; ok is false when it is older
// (the store has it).
func (s *Subscription) readRing(out []store.LogEntry, max int) ([]store.LogEntry, bool) {
	h := s.hub
	h.mu.RLock()
	defer h.mu.RUnlock()
	if s.cursor < h.base {
		return out, false
	}
	max += len(out)
	// The first entry after the cursor.
	i := sort.Search(h.n, func(i int) bool { return h.buf[(h.start+i)%len(h.buf)].Position > s.cursor })
	for scanned := 0; i < h.n && scanned < maxRingScan; i, scanned = i+1, scanned+1 {
		e := &h.buf[(h.start+i)%len(h.buf)]
		s.cursor = e.Position
		if s.filter.matches(e) {
			out = append(out, *e)
			if len(out) == max {
				return out, true
			}
		}
	}
	if i == h.n && s.cursor < h.head {
		s.cursor = h.head // positions after the last entry, up to head, hold nothing (a trimmed hole)
	}
	return out, true
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// Page reads one page of the entries f selects after position after, from the store (the JSON
// replay): at most limit entries, and the position to go on from. A position older than what
// the log keeps fails with an *ExpiredError.
func (h *Hub) Page(f Filter, after int64, limit int) (store.LogPage, error) {
	page, err := h.log.ReadLog(f.query(after, limit))
	if errors.Is(err, store.ErrCursorExpired) {
		b, berr := h.Bounds()
		if berr != nil {
			return store.LogPage{}, berr
		}
		return store.LogPage{}, &ExpiredError{After: after, Oldest: b.Oldest}
	}
	return page, err
}
