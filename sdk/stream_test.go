package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	sse "github.com/tmaxmax/go-sse"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// scriptedStream is a fake server for one execution whose events are all stored (it has
// finished). Each SSE request takes the next step of the script; once the script is used up, a
// request gets what a correct server sends: every event after its cursor.
type scriptedStream struct {
	t       *testing.T
	events  []api.RuntimeEvent // sequences 1..n, the last one terminal
	state   api.ExecutionState
	mu      sync.Mutex
	script  []streamStep
	cursors []int64 // the cursor of each SSE request, as the server read it
	replays int     // JSON replay requests
}

// streamStep is what one SSE request gets: an error status, or some events and then a cut.
type streamStep struct {
	status int
	send   []int64
}

func newScriptedStream(t *testing.T, n int, script ...streamStep) *scriptedStream {
	s := &scriptedStream{t: t, state: api.ExecutionStateSucceeded, script: script}
	for seq := int64(1); seq <= int64(n); seq++ {
		typ := api.StandardEventTypeOutputTextDelta
		if seq == int64(n) {
			typ = api.StandardEventTypeRunCompleted
		}
		var data api.EventData
		if err := data.FromTextDeltaData(api.TextDeltaData{Text: strconv.FormatInt(seq, 10)}); err != nil {
			panic(err)
		}
		s.events = append(s.events, api.RuntimeEvent{
			ID: fmt.Sprintf("exec_1:%d", seq), ExecutionID: "exec_1", Sequence: seq, Type: typ,
			Time: "2026-09-02T08:15:30.123Z", Data: data,
		})
	}
	return s
}

func (s *scriptedStream) cursor(r *http.Request) int64 {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("after")
	}
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

func (s *scriptedStream) after(cursor int64) []api.RuntimeEvent {
	return s.events[min(int(cursor), len(s.events)):]
}

func (s *scriptedStream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/v1/executions/exec_1":
		writeJSON(w, http.StatusOK, api.Execution{ID: "exec_1", State: s.state})
	case r.URL.Path != "/v1/executions/exec_1/events":
		writeJSON(w, http.StatusNotFound, map[string]string{"code": "NOT_FOUND", "message": "Execution not found: x"})
	case r.Header.Get("Accept") != "text/event-stream":
		s.mu.Lock()
		s.replays++
		s.mu.Unlock()
		events := s.after(s.cursor(r))
		next := s.cursor(r)
		if len(events) > 0 {
			next = events[len(events)-1].Sequence
		}
		writeJSON(w, http.StatusOK, api.EventList{Events: events, NextCursor: next})
	default:
		s.stream(w, r)
	}
}

func (s *scriptedStream) stream(w http.ResponseWriter, r *http.Request) {
	cursor := s.cursor(r)
	s.mu.Lock()
	s.cursors = append(s.cursors, cursor)
	step := streamStep{send: nil}
	scripted := len(s.script) > 0
	if scripted {
		step, s.script = s.script[0], s.script[1:]
	}
	s.mu.Unlock()
	if step.status != 0 {
		w.Header().Set("Retry-After", "0")
		writeJSON(w, step.status, map[string]string{"code": "INTERNAL_ERROR", "message": "scripted failure"})
		return
	}
	if !scripted {
		for _, e := range s.after(cursor) {
			step.send = append(step.send, e.Sequence)
		}
	}
	session, err := sse.Upgrade(w, r)
	if err != nil {
		s.t.Error(err)
		return
	}
	for _, seq := range step.send {
		e := s.events[seq-1]
		raw, _ := json.Marshal(e)
		msg := &sse.Message{ID: sse.ID(strconv.FormatInt(seq, 10)), Type: sse.Type(string(e.Type))}
		msg.AppendData(string(raw))
		if session.Send(msg) != nil {
			return
		}
	}
	_ = session.Flush()
}

func collect(t *testing.T, c *Client, ctx context.Context, after int64) ([]int64, error) {
	t.Helper()
	var seqs []int64
	for e, err := range c.Events(ctx, "exec_1", after) {
		if err != nil {
			return seqs, err
		}
		seqs = append(seqs, e.Sequence)
	}
	return seqs, nil
}

func wantSequence(t *testing.T, got []int64, from, to int64) {
	t.Helper()
	if len(got) != int(to-from+1) {
		t.Fatalf("got sequences %v, want %d..%d", got, from, to)
	}
	for i, seq := range got {
		if seq != from+int64(i) {
			t.Fatalf("got sequences %v, want %d..%d", got, from, to)
		}
	}
}

func TestEventsResumesDropsDuplicatesAndFillsGaps(t *testing.T) {
	srv := newScriptedStream(t, 8,
		streamStep{send: []int64{1, 2, 3}},    // then the connection drops
		streamStep{send: []int64{1, 2, 3, 4}}, // a reconnect that re-sends what was delivered
		streamStep{status: 503},               // retried by the HTTP layer
		streamStep{send: []int64{6, 7}},       // 5 is missing: the replay fills it (and the rest)
	)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	c, _ := New(hs.URL, WithRetry(fastRetry))
	got, err := collect(t, c, context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	wantSequence(t, got, 1, 8)
	if srv.cursors[1] != 3 {
		t.Errorf("reconnect resumed from %d, want 3 (cursors %v)", srv.cursors[1], srv.cursors)
	}
	if srv.replays == 0 {
		t.Error("the gap was not filled from the JSON replay")
	}
}

func TestEventsReconnectsAfterErrorsThatOutlastRetries(t *testing.T) {
	srv := newScriptedStream(t, 5,
		streamStep{send: []int64{1, 2}},
		streamStep{status: 503},
		streamStep{status: 429},
		streamStep{status: 502},
	)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	c, _ := New(hs.URL, WithRetry(RetryPolicy{MaxAttempts: 1, MinWait: fastRetry.MinWait, MaxWait: fastRetry.MaxWait}))
	got, err := collect(t, c, context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	wantSequence(t, got, 1, 5)
}

func TestEventsFromAfterTheEndOfAFinishedExecution(t *testing.T) {
	srv := newScriptedStream(t, 4)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	c, _ := New(hs.URL, WithRetry(fastRetry))
	got, err := collect(t, c, context.Background(), 4)
	if err != nil || len(got) != 0 {
		t.Fatalf("got %v, %v; want no events and no error", got, err)
	}
	got, err = collect(t, c, context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	wantSequence(t, got, 3, 4)
}

func TestEventsOfUnknownExecution(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"code": "NOT_FOUND", "message": "Execution not found: exec_1"})
	}))
	defer hs.Close()
	c, _ := New(hs.URL, WithRetry(fastRetry))
	n := 0
	for _, err := range c.Events(context.Background(), "exec_1", 0) {
		n++
		var e *Error
		if !errors.Is(err, ErrNotFound) || !errors.As(err, &e) || e.Message != "Execution not found: exec_1" {
			t.Fatalf("err = %v", err)
		}
	}
	if n != 1 {
		t.Fatalf("%d elements, want the error alone", n)
	}
}

func TestEventsStopsWhenTheCallerStops(t *testing.T) {
	srv := newScriptedStream(t, 6)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	c, _ := New(hs.URL, WithRetry(fastRetry))
	var got []int64
	for e, err := range c.Events(context.Background(), "exec_1", 0) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.Sequence)
		if len(got) == 2 {
			break
		}
	}
	wantSequence(t, got, 1, 2)
}

func TestEventsEndsWithTheContext(t *testing.T) {
	// An execution that never ends, and every connection is cut before its first event.
	srv := newScriptedStream(t, 3)
	srv.state = api.ExecutionStateRunning
	srv.events = srv.events[:0]
	for range 1000 {
		srv.script = append(srv.script, streamStep{})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.ServeHTTP(w, r)
		srv.mu.Lock()
		defer srv.mu.Unlock()
		if len(srv.cursors) == 3 {
			cancel() // the caller gives up while the stream keeps reconnecting
		}
	}))
	defer hs.Close()
	c, _ := New(hs.URL, WithRetry(fastRetry))
	_, err := collect(t, c, ctx, 0)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
