package proxy

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// appendEventFrame must write byte for byte what go-sse's Message writes for the same event,
// with and without the retry hint, and split data with line breaks as go-sse does.
func TestAppendEventFrameMatchesGoSSE(t *testing.T) {
	events := []backend.Event{
		{Sequence: 1, Type: api.StandardEventTypeRunQueued, JSON: []byte(`{"data":{"providerId":"mock"},"sequence":1}`)},
		{Sequence: 42, Type: api.StandardEventTypeOutputTextDelta, JSON: []byte(`{"data":{"text":"a\\nb <&> \u2028"},"sequence":42}`)},
		{Sequence: 9_000_000_000, Type: api.StandardEventTypeRunCompleted, JSON: []byte(`{}`)},
		{Sequence: 7, Type: api.StandardEventTypeProviderEvent, JSON: []byte("{\"raw\":\n1,\r\n\"x\":2}")}, // not compact: the fallback
	}
	for _, ev := range events {
		for _, retry := range []time.Duration{0, 1500 * time.Millisecond, 500 * time.Microsecond} {
			msg := sse.Message{ID: sse.ID(strconv.FormatInt(ev.Sequence, 10)), Type: sse.Type(string(ev.Type)), Retry: retry}
			msg.AppendData(string(ev.JSON))
			want, err := msg.MarshalText()
			if err != nil {
				t.Fatal(err)
			}
			got := appendEventFrame([]byte("prefix"), ev, retry)
			if !bytes.Equal(got, append([]byte("prefix"), want...)) {
				t.Errorf("event %d, retry %v:\n got %q\nwant %q", ev.Sequence, retry, got[len("prefix"):], want)
			}
		}
	}
}

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
