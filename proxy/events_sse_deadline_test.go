package proxy

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// deadlineWriter records the write deadlines http.ResponseController sets on it.
type deadlineWriter struct {
	http.ResponseWriter
	deadlines []time.Time
}

func (d *deadlineWriter) SetWriteDeadline(t time.Time) error {
	d.deadlines = append(d.deadlines, t)
	return nil
}

// The write deadline is re-armed only after a quarter of StreamWriteTimeout, and every write
// (every call) still has at least three quarters of it ahead.
func TestWriteDeadlineIsReArmedSparingly(t *testing.T) {
	const timeout = 2 * time.Second // long enough that a stalled test machine does not re-arm it early
	w := &deadlineWriter{ResponseWriter: httptest.NewRecorder()}
	s := &stream{h: New(nil, Options{StreamWriteTimeout: timeout}), rc: http.NewResponseController(w)}
	check := func(calls int) {
		t.Helper()
		now := time.Now()
		s.armWriteDeadline()
		if len(w.deadlines) != calls {
			t.Fatalf("%d deadlines set, want %d", len(w.deadlines), calls)
		}
		if ahead := w.deadlines[len(w.deadlines)-1].Sub(now); ahead < timeout*3/4 {
			t.Fatalf("only %v of the deadline left for this write", ahead)
		}
	}
	check(1) // the first write arms it
	check(1) // right after: still far enough away
	time.Sleep(timeout/4 + 10*time.Millisecond)
	check(2) // a quarter has passed: re-armed
}
