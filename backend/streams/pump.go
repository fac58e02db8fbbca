package streams

import (
	"errors"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
)

// The hub's own loops: on a store shared by several nodes, the pump that reads what other
// nodes committed into the ring; on every store with a retention, the trimming of its log.

func (h *Hub) wakePump() {
	select {
	case h.poke <- struct{}{}:
	default:
	}
}

// pumpLoop reads, on a shared store, what the ring lacks after its head: other nodes' commits.
// A notice wakes it; so does the poll, so that a missed notice only delays.
func (h *Hub) pumpLoop(quit <-chan struct{}) {
	poll := time.NewTicker(h.opts.Poll)
	defer poll.Stop()
	for {
		select {
		case <-quit:
			return
		case <-h.poke:
		case <-poll.C:
		}
		if err := h.pump(); err != nil {
			h.opts.OnError(err)
		}
	}
}

// pump reads the log after the ring's head, page after page, into the ring.
func (h *Hub) pump() error {
	for {
		h.mu.RLock()
		after := h.head
		h.mu.RUnlock()
		page, err := h.log.ReadLog(store.LogQuery{After: after, AnyTenant: true, Limit: 1024})
		if errors.Is(err, store.ErrCursorExpired) {
			// The ring's head was trimmed away (a node idle for a whole retention): start again
			// at the log's end; subscribers behind it get the expiry from their own reads.
			bounds, berr := h.log.StreamLogBounds()
			if berr != nil {
				return berr
			}
			h.mu.Lock()
			h.resetLocked(bounds.Last)
			h.mu.Unlock()
			return nil
		}
		if err != nil {
			return err
		}
		if page.Reached <= after {
			return nil
		}
		h.mu.Lock()
		moved := h.head != after // the observer appended meanwhile: read again from there
		if !moved {
			h.appendLocked(page.Entries, page.Reached)
		}
		h.mu.Unlock()
		if !moved && len(page.Entries) < 1024 {
			return nil
		}
	}
}

// resetLocked empties the ring at position last.
func (h *Hub) resetLocked(last int64) {
	for h.n > 0 {
		h.evictLocked()
	}
	h.start, h.bytes = 0, 0
	h.base, h.head = last, last
}

// trimLoop trims the store's log every Retention/2 (at most hourly, at least every second).
func (h *Hub) trimLoop(quit <-chan struct{}) {
	every := min(max(h.opts.Retention/2, time.Second), time.Hour)
	trim := func() {
		if _, err := h.log.TrimLog(time.Now().Add(-h.opts.Retention)); err != nil {
			h.opts.OnError(err)
		}
	}
	trim()
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		select {
		case <-quit:
			return
		case <-ticker.C:
			trim()
		}
	}
}
