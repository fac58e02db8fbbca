package hotwindow

import "github.com/harness-edge/harness-edge/backend/store"

// Window is the newest events of one execution's log, kept for readers: a reader whose cursor
// is inside it reads from memory, one further back reads the store up to Last (everything up
// to Last was committed before it was appended here). Not safe for concurrent use: its owner
// guards it (a live execution's mu, a tail's).
type Window struct {
	limit int           // events kept, at most (and MaxBytes); see trim
	hot   []store.Event // hot[0].Sequence == start
	start int64
	bytes int // the JSON bytes of hot
}

// New returns an empty window of at most limit events over a log whose events up to last are
// already stored: the next one appended is last+1.
func New(limit int, last int64) Window {
	return Window{limit: limit, start: last + 1}
}

// Last is the sequence of the last event of the log (appended, or stored before the window
// began); 0 for an empty log.
func (w *Window) Last() int64 { return w.start + int64(len(w.hot)) - 1 }

// Append adds events, which must follow Last in sequence order, and trims the window.
func (w *Window) Append(events []store.Event) {
	w.hot = append(w.hot, events...)
	for _, e := range events {
		w.bytes += len(e.JSON)
	}
	var drop, dropped int
	w.hot, drop, dropped = trim(w.hot, w.bytes, w.limit)
	w.start += int64(drop)
	w.bytes -= dropped
}

// Read returns up to limit events after cursor (limit <= 0: all) when the window holds them:
// a view of the window's own array, without room to append into it, which nothing changes
// afterwards — Append writes only past the window's length and trim moves what it keeps to a
// fresh array — so it needs no copy (every live subscriber reads every event: a copy was an
// allocation per event per subscriber). Callers must not write into it; appending is safe.
// The events' JSON is immutable and shared. When the cursor is older
// than the window, it returns no events and how many to read from the store instead (those
// after cursor up to Last, at most limit). Both are zero when the cursor is at Last or past it.
func (w *Window) Read(cursor int64, limit int) (events []store.Event, fromStore int) {
	last := w.Last()
	if cursor >= last {
		return nil, 0
	}
	if cursor+1 < w.start {
		n := int(last - cursor)
		if limit > 0 && limit < n {
			n = limit
		}
		return nil, n
	}
	from := int(cursor + 1 - w.start)
	to := len(w.hot)
	if limit > 0 && from+limit < to {
		to = from + limit
	}
	return w.hot[from:to:to], 0
}

// Whole is the whole log, from its first event, when the window still holds all of it (a
// slice of the window's own array: its owner must not append to it).
func (w *Window) Whole() ([]store.Event, bool) {
	if w.start != 1 {
		return nil, false
	}
	return w.hot[:len(w.hot):len(w.hot)], true
}
