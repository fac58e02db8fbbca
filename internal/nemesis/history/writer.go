package history

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// Writer appends lines to a history. It is safe for concurrent use: every
// client, stream reader and fault injector writes through one Writer, and
// each line is written whole.
type Writer struct {
	mu    sync.Mutex
	buf   *bufio.Writer
	enc   *json.Encoder
	err   error
	start time.Time
	ids   atomic.Int64
}

// NewWriter writes lines to w. Call Flush (or Close on the file) at the end.
func NewWriter(w io.Writer) *Writer {
	buf := bufio.NewWriter(w)
	return &Writer{buf: buf, enc: json.NewEncoder(buf), start: time.Now()}
}

// Now is the history's clock: the wall time at NewWriter plus the monotonic
// time since, so a wall-clock step during a run cannot reorder lines.
func (w *Writer) Now() time.Time {
	return w.start.Add(time.Since(w.start)).Round(0).UTC()
}

// NextID returns a request id unique in this history.
func (w *Writer) NextID() int64 { return w.ids.Add(1) }

// Run writes the first line.
func (w *Writer) Run(r Run) error {
	r.Header = w.header(KindRun, r.T)
	return w.write(r)
}

// Request writes one request; an ID of 0 is given the next id.
func (w *Writer) Request(r Request) error {
	t := r.T
	if t.IsZero() {
		t = r.Complete // a request's moment is its completion
	}
	r.Header = w.header(KindRequest, t)
	if r.ID == 0 {
		r.ID = w.NextID()
	}
	r.Body = keepJSON(r.Body)
	r.Answer = keepJSON(r.Answer)
	return w.write(r)
}

// Event writes one received event.
func (w *Writer) Event(e Event) error {
	e.Header = w.header(KindEvent, e.T)
	e.Data = keepJSON(e.Data)
	return w.write(e)
}

// Fault writes a fault's start or end.
func (w *Writer) Fault(f Fault) error {
	f.Header = w.header(KindFault, f.T)
	return w.write(f)
}

// Final writes one execution's final state.
func (w *Writer) Final(f Final) error {
	f.Header = w.header(KindFinal, f.T)
	f.Snapshot = keepJSON(f.Snapshot)
	return w.write(f)
}

// Flush writes buffered lines out and returns the first error met.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.buf.Flush(); err != nil && w.err == nil {
		w.err = err
	}
	return w.err
}

// header keeps a time the caller set (the event's receipt, the request's
// completion) and otherwise stamps the line now.
func (w *Writer) header(k Kind, t time.Time) Header {
	if t.IsZero() {
		t = w.Now()
	}
	return Header{Kind: k, T: t}
}

func (w *Writer) write(v any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if err := w.enc.Encode(v); err != nil {
		w.err = fmt.Errorf("history: write: %w", err)
	}
	return w.err
}

// keepJSON makes a raw field safe to encode: invalid JSON is kept as a string.
func keepJSON(b json.RawMessage) json.RawMessage {
	if len(b) == 0 || json.Valid(b) {
		return b
	}
	return RawJSON(b)
}
