package proxy

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/harness-edge/harness-edge/sdk/api"
)

const sseAccept = "text/event-stream"

// TestSSEFullRun reads a finished execution's whole stream and checks the framing with go-sse's
// reader: one message per event, event = type, id = sequence, data = the stored JSON, a retry
// hint on the first message only, the stream closed after the terminal event.
func TestSSEFullRun(t *testing.T) {
	ts := newTestServer(t, Options{RetryHint: 1500 * time.Millisecond})
	exec := ts.start("hello runtime", "")
	ts.waitTerminal(exec.ID)
	stored := decodeBody[rawEventList](t, ts.get("/v1/executions/"+exec.ID+"/events")).Events

	res := ts.do(request{method: http.MethodGet, path: "/v1/executions/" + exec.ID + "/events", header: map[string]string{"Accept": sseAccept}})
	requireStatus(t, res, http.StatusOK)
	for name, want := range map[string]string{
		"Content-Type":      "text/event-stream",
		"Cache-Control":     "no-cache",
		"X-Accel-Buffering": "no",
		// The default heartbeat, announced (docs/protocol.md, "Heartbeat interval").
		"Harness-Heartbeat-Ms": "15000",
	} {
		if got := res.header.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}

	var got []sse.Event
	for ev, err := range sse.Read(bytes.NewReader(res.body), nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	if len(got) != len(stored) {
		t.Fatalf("%d messages, %d stored events:\n%s", len(got), len(stored), res.body)
	}
	for i, ev := range got {
		want := decodeBody[api.RuntimeEvent](t, result{body: stored[i]})
		if ev.Data != string(stored[i]) || ev.Type != string(want.Type) || ev.LastEventID != fmt.Sprint(want.Sequence) {
			t.Fatalf("message %d = %+v, want event %s", i, ev, stored[i])
		}
	}
	if n := strings.Count(string(res.body), "retry: 1500\n"); n != 1 || !strings.HasPrefix(string(res.body), "id: 1\nevent: run.queued\nretry: 1500\n") {
		t.Fatalf("retry hint: %d times, stream starts %q", n, res.body[:min(len(res.body), 60)])
	}
	if !strings.HasSuffix(string(res.body), "\n\n") {
		t.Fatal("the last message is not terminated by a blank line")
	}

	// A replay from after=2 starts at 3 and ends with run.completed (reference test).
	s := ts.openStream(exec.ID, "?after=2", nil)
	defer s.close()
	var seqs []int64
	var last api.RuntimeEvent
	for ev, ok := s.next(); ok; ev, ok = s.next() {
		seqs = append(seqs, ev.Sequence)
		last = ev
	}
	if !equalInts(seqs, []int64{3, 4, 5, 6, 7}) || last.Type != api.StandardEventTypeRunCompleted {
		t.Fatalf("replay after 2: %v ending with %s", seqs, last.Type)
	}

	// The cursor at the end of a finished execution, given in `after` alone (a first request, as
	// the reference's SDK sends): an empty stream that closes at once.
	for _, header := range []map[string]string{
		{"Accept": sseAccept},
		{"Accept": "TEXT/Event-Stream; charset=utf-8"},
	} {
		res = ts.do(request{method: http.MethodGet, path: "/v1/executions/" + exec.ID + "/events?after=7", header: header})
		if res.status != http.StatusOK || len(res.body) != 0 || res.header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("stream at the end with %v: %s %v", header, res, res.header)
		}
	}
}

// TestSSEReconnectToAFinishedStreamIs204: an EventSource reconnect (Last-Event-ID) at or past the
// end of a finished execution is answered 204 No Content, the one answer after which EventSource
// clients stop reconnecting; before the end it streams the rest; `after` alone keeps the 200;
// a running execution's reconnect at its end stays open.
func TestSSEReconnectToAFinishedStreamIs204(t *testing.T) {
	ts := newTestServer(t, Options{})
	exec := ts.start("hello runtime", "")
	ts.waitTerminal(exec.ID) // 7 events
	events := "/v1/executions/" + exec.ID + "/events"
	for _, tc := range []struct {
		path, lastEventID string
		status            int
	}{
		{"?after=0", "7", http.StatusNoContent},
		{"", "7", http.StatusNoContent},
		{"?after=3", "8", http.StatusNoContent}, // past the end
		{"?after=7", "", http.StatusOK},         // `after` alone: the reference's streamEvents
		{"?after=7", "6", http.StatusOK},        // one event left: run.completed
	} {
		header := map[string]string{"Accept": sseAccept}
		if tc.lastEventID != "" {
			header["Last-Event-ID"] = tc.lastEventID
		}
		res := ts.do(request{method: http.MethodGet, path: events + tc.path, header: header})
		if res.status != tc.status {
			t.Fatalf("%s with Last-Event-ID %q: %s, want %d", tc.path, tc.lastEventID, res, tc.status)
		}
		if tc.status == http.StatusNoContent && (len(res.body) != 0 || res.header.Get("Content-Type") != "") {
			t.Fatalf("204 with a body or a content type: %q %v", res.body, res.header)
		}
		if tc.lastEventID == "6" && !strings.Contains(string(res.body), "event: run.completed") {
			t.Fatalf("resuming before the end: %s", res)
		}
	}
	// The JSON replay is unchanged by Last-Event-ID at the end: an empty page.
	res := ts.do(request{method: http.MethodGet, path: events, header: map[string]string{"Last-Event-ID": "7"}})
	requireStatus(t, res, http.StatusOK)

	// A running execution: a reconnect at its current end is a live stream, not a 204.
	waiting := ts.start("wait", `{"requireApproval":true}`)
	required := ts.waitForEvent(waiting.ID, api.StandardEventTypeActionRequired)
	ts.openStream(waiting.ID, "", map[string]string{"Last-Event-ID": fmt.Sprint(required.Sequence)}).close() // fails unless 200
}

// TestSSELiveDelivery shows events arrive while the execution runs, not when it ends. With
// approval the proof is by construction: action.required must reach the client over the
// stream before the run can continue, because the test answers it only after reading it.
// The slow mock (delayMs 50) then proves the deltas are sent one by one.
func TestSSELiveDelivery(t *testing.T) {
	ts := newTestServer(t, Options{})
	exec := ts.start(strings.Repeat("slow ", 20), `{"requireApproval":true,"delayMs":50}`)
	s := ts.openStream(exec.ID, "", nil)
	defer s.close()

	var received []api.RuntimeEvent
	for {
		ev, ok := s.next()
		if !ok {
			t.Fatal("stream ended before action.required")
		}
		received = append(received, ev)
		if ev.Type == api.StandardEventTypeActionRequired {
			break
		}
	}
	if got := typesOf(received); got != "run.queued run.started action.required" {
		t.Fatalf("before the approval: %s", got)
	}
	actionID := typed(received[2].Data.AsActionRequest()).ID
	requireStatus(t, ts.post("/v1/executions/"+exec.ID+"/actions/"+actionID+":respond", `{"approved":true}`), http.StatusOK)

	// The first delta arrives while the execution is still running: it has 20 more chunks to
	// write, 50 ms apart.
	sawRunningAfterDelta := false
	for {
		ev, ok := s.next()
		if !ok {
			break
		}
		received = append(received, ev)
		if ev.Type == api.StandardEventTypeOutputTextDelta && !sawRunningAfterDelta {
			state := ts.execution(exec.ID).State
			if state != api.ExecutionStateRunning {
				t.Fatalf("state %s when the first delta arrived", state)
			}
			sawRunningAfterDelta = true
		}
	}
	if !sawRunningAfterDelta {
		t.Fatal("no delta received")
	}
	if last := received[len(received)-1]; last.Type != api.StandardEventTypeRunCompleted {
		t.Fatalf("last event %s", last.Type)
	}
	// 3 before the answer, action.responded, 21 deltas, output.text.done; then the terminal.
	if before := len(received) - 1; before != 26 {
		t.Fatalf("%d events before the terminal one: %s", before, typesOf(received))
	}
	requireSameAsReplay(t, ts, exec.ID, received)
}

// TestSSEResumeWithLastEventID drops a stream mid-way and reconnects with the last sequence in
// Last-Event-ID (the URL keeps its first after=0, as a reconnecting EventSource does): the
// two parts join with no gap and no duplicate.
func TestSSEResumeWithLastEventID(t *testing.T) {
	ts := newTestServer(t, Options{})
	exec := ts.start(strings.Repeat("resume ", 30), `{"delayMs":50}`)

	first := ts.openStream(exec.ID, "?after=0", nil)
	var received []api.RuntimeEvent
	for len(received) < 4 {
		ev, ok := first.next()
		if !ok {
			t.Fatal("stream ended early")
		}
		received = append(received, ev)
	}
	first.close()
	if state := ts.execution(exec.ID).State; state == api.ExecutionStateSucceeded {
		t.Fatal("the execution finished before the disconnect; the test proves nothing")
	}

	second := ts.openStream(exec.ID, "?after=0", map[string]string{"Last-Event-ID": fmt.Sprint(received[len(received)-1].Sequence)})
	defer second.close()
	for ev, ok := second.next(); ok; ev, ok = second.next() {
		received = append(received, ev)
	}
	requireSameAsReplay(t, ts, exec.ID, received)
	if received[len(received)-1].Type != api.StandardEventTypeRunCompleted {
		t.Fatal("the resumed stream did not end with run.completed")
	}
	waitForNoOpenStreams(t, ts)
}

// TestSSEHeartbeat: an execution waiting for approval is idle; the stream carries comment
// heartbeats, which go-sse's reader (and the reference SDK) skip. Once approved, the same stream
// carries the rest of the execution (an idle stream gives its frame buffer back at each
// heartbeat and takes a new one for the next batch).
func TestSSEHeartbeat(t *testing.T) {
	ts := newTestServer(t, Options{Heartbeat: 20 * time.Millisecond})
	exec := ts.start("wait", `{"requireApproval":true}`)
	action := typed(ts.waitForEvent(exec.ID, api.StandardEventTypeActionRequired).Data.AsActionRequest())

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	req := ts.newHTTPRequest(ctx, request{method: http.MethodGet, path: "/v1/executions/" + exec.ID + "/events", header: map[string]string{"Accept": sseAccept}})
	resp, err := ts.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()

	heartbeats := 0
	lines := readLines(t, resp.Body, func(line string) bool {
		if line == ": keep-alive" {
			heartbeats++
		}
		return heartbeats == 3
	})
	if heartbeats != 3 {
		t.Fatalf("stream ended after %d heartbeats:\n%s", heartbeats, strings.Join(lines, "\n"))
	}
	text := strings.Join(lines, "\n")
	// The backlog comes first; heartbeats never carry the retry hint (a retry-only block is
	// dispatched as an empty event by some clients).
	if !strings.HasPrefix(text, "id: 1\nevent: run.queued\nretry: 250\n") || strings.Count(text, "retry:") != 1 {
		t.Fatalf("stream:\n%s", text)
	}
	var dataLines int
	for _, line := range lines {
		if strings.HasPrefix(line, "data: ") {
			dataLines++
		}
	}
	if dataLines != 3 {
		t.Fatalf("%d events on an idle stream, want the 3 of the backlog:\n%s", dataLines, text)
	}
	if state := ts.execution(exec.ID).State; state != api.ExecutionStateAwaitingApproval {
		t.Fatalf("state %s", state)
	}

	requireStatus(t, ts.post("/v1/executions/"+exec.ID+"/actions/"+action.ID+":respond", `{"approved":true}`), http.StatusOK)
	rest := readLines(t, resp.Body, func(line string) bool { return line == "event: run.completed" })
	if len(rest) == 0 || rest[len(rest)-1] != "event: run.completed" || !slices.Contains(rest, "id: 4") {
		t.Fatalf("after the approval, the idle stream carried:\n%s", strings.Join(rest, "\n"))
	}
}

// TestTruncatedStreamLeavesTheExecutionAlone: observing never affects the execution (reference
// test): a dropped stream while awaiting approval, then a cancel.
func TestTruncatedStreamLeavesTheExecutionAlone(t *testing.T) {
	ts := newTestServer(t, Options{})
	exec := ts.start("wait", `{"requireApproval":true}`)
	ts.waitForEvent(exec.ID, api.StandardEventTypeActionRequired) // opens, reads, drops a stream
	waitForNoOpenStreams(t, ts)
	if state := ts.execution(exec.ID).State; state != api.ExecutionStateAwaitingApproval {
		t.Fatalf("state %s after the stream was dropped", state)
	}
	res := ts.post("/v1/executions/"+exec.ID+":cancel", `{"reason":"stop"}`)
	requireStatus(t, res, http.StatusOK)
	if got := decodeBody[api.Execution](t, res).State; got != api.ExecutionStateCancelled {
		t.Fatalf("state %s", got)
	}
	events := ts.eventList(exec.ID, "").Events
	if last := events[len(events)-1]; last.Type != api.StandardEventTypeRunCancelled {
		t.Fatalf("last event %s", last.Type)
	}
}

// TestShutdownEndsStreams: Shutdown closes open streams cleanly and new ones end once their
// backlog is written; the execution is untouched and JSON operations keep working.
func TestShutdownEndsStreams(t *testing.T) {
	ts := newTestServer(t, Options{})
	exec := ts.start("wait", `{"requireApproval":true}`)

	s := ts.openStream(exec.ID, "", nil)
	defer s.close()
	for {
		ev, ok := s.next()
		if !ok {
			t.Fatal("stream ended before action.required")
		}
		if ev.Type == api.StandardEventTypeActionRequired {
			break
		}
	}
	if n := ts.streams.open.Load(); n != 1 {
		t.Fatalf("%d open streams", n)
	}

	ts.handler.Shutdown()
	ts.handler.Shutdown() // twice is fine
	if ev, ok := s.next(); ok {
		t.Fatalf("event %+v after Shutdown", ev)
	}
	waitForNoOpenStreams(t, ts)

	// A stream opened after Shutdown writes the backlog and ends.
	late := ts.openStream(exec.ID, "", nil)
	defer late.close()
	var seqs []int64
	for ev, ok := late.next(); ok; ev, ok = late.next() {
		seqs = append(seqs, ev.Sequence)
	}
	if !equalInts(seqs, []int64{1, 2, 3}) {
		t.Fatalf("stream after Shutdown: %v", seqs)
	}
	if state := ts.execution(exec.ID).State; state != api.ExecutionStateAwaitingApproval {
		t.Fatalf("state %s after Shutdown", state)
	}
	if opened := ts.streams.opened.Load(); opened != 2 {
		t.Fatalf("observer saw %d streams, want 2", opened)
	}
}

func typesOf(events []api.RuntimeEvent) string {
	types := make([]string, len(events))
	for i, ev := range events {
		types[i] = string(ev.Type)
	}
	return strings.Join(types, " ")
}

// requireSameAsReplay checks events received over SSE are exactly the JSON replay: every
// sequence once, in order, with the same content.
func requireSameAsReplay(t *testing.T, ts *testServer, executionID string, received []api.RuntimeEvent) {
	t.Helper()
	replay := ts.eventList(executionID, "").Events
	if len(received) != len(replay) {
		t.Fatalf("received %v, replay %v", sequences(received), sequences(replay))
	}
	for i := range replay {
		if fmt.Sprint(received[i]) != fmt.Sprint(replay[i]) {
			t.Fatalf("event %d received %+v, replay %+v", i, received[i], replay[i])
		}
	}
}

// waitForNoOpenStreams waits until the server has noticed every client that left. It polls
// because the server learns of a dropped connection asynchronously; the bound only keeps a
// leak from hanging the test.
func waitForNoOpenStreams(t *testing.T, ts *testServer) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for ts.streams.open.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d streams still open", ts.streams.open.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// flushErrorWriter is shaped like Caddy's response wrappers (caddyhttp.responseRecorder,
// IdleTimeoutWriter): no http.Flusher, but FlushError and Unwrap.
type flushErrorWriter struct {
	http.ResponseWriter
}

func (w flushErrorWriter) FlushError() error {
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w flushErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestSSEBehindAWrappedWriter: events still go out one by one when the writer is wrapped the
// way Caddy wraps it. If flushing failed, action.required would sit in a buffer, the test
// could never answer it, and the stream would time out.
func TestSSEBehindAWrappedWriter(t *testing.T) {
	ts := newTestServer(t, Options{})
	ts.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := any(flushErrorWriter{w}).(http.Flusher); ok {
			t.Error("the wrapper must not be an http.Flusher for this test to mean anything")
		}
		ts.handler.ServeHTTP(flushErrorWriter{w}, r)
	})
	exec := ts.start("wrapped", `{"requireApproval":true}`)
	s := ts.openStream(exec.ID, "", nil)
	defer s.close()
	for {
		ev, ok := s.next()
		if !ok {
			t.Fatal("stream ended before action.required")
		}
		if ev.Type == api.StandardEventTypeActionRequired {
			requireStatus(t, ts.post("/v1/executions/"+exec.ID+"/actions/"+typed(ev.Data.AsActionRequest()).ID+":respond", `{"approved":true}`), http.StatusOK)
			break
		}
	}
	var last api.RuntimeEvent
	for ev, ok := s.next(); ok; ev, ok = s.next() {
		last = ev
	}
	if last.Type != api.StandardEventTypeRunCompleted {
		t.Fatalf("last event %s", last.Type)
	}
}

// headerRecorder records the Last-Event-ID of every request a client sends.
type headerRecorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	ids  []string
}

func (h *headerRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.ids = append(h.ids, r.Header.Get("Last-Event-ID"))
	h.mu.Unlock()
	return h.next.RoundTrip(r)
}

func (h *headerRecorder) lastEventIDs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.ids...)
}

// TestGoSSEClientResumes runs go-sse's own reconnecting client (what the SDK uses) against the
// stream: the connection is cut while the execution waits for approval, the client comes back
// with Last-Event-ID, and it sees every event exactly once, and no empty event (which a
// retry-only message would have produced).
func TestGoSSEClientResumes(t *testing.T) {
	ts := newTestServer(t, Options{RetryHint: 5 * time.Millisecond})
	exec := ts.start("resume me", `{"requireApproval":true}`)

	recorder := &headerRecorder{next: ts.srv.Client().Transport}
	client := &sse.Client{
		HTTPClient: &http.Client{Transport: recorder},
		Backoff:    sse.Backoff{InitialInterval: 5 * time.Millisecond, MaxRetries: 20},
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.srv.URL+"/v1/executions/"+exec.ID+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	conn := client.NewConnection(req)
	received := make(chan sse.Event, 64)
	conn.SubscribeToAll(func(ev sse.Event) { received <- ev })
	connectDone := make(chan error, 1)
	go func() { connectDone <- conn.Connect() }()

	var events []api.RuntimeEvent
	nextEvent := func() api.RuntimeEvent {
		t.Helper()
		select {
		case raw := <-received:
			ev := decodeBody[api.RuntimeEvent](t, result{body: []byte(raw.Data)})
			if raw.Type != string(ev.Type) || raw.LastEventID != fmt.Sprint(ev.Sequence) {
				t.Fatalf("framing %+v", raw)
			}
			events = append(events, ev)
			return ev
		case err := <-connectDone:
			t.Fatalf("connection ended: %v", err)
		}
		panic("unreachable")
	}
	for nextEvent().Type != api.StandardEventTypeActionRequired {
	}
	ts.cutConnections() // cut the stream (detached: httptest no longer knows it); the client reconnects by itself
	actionID := typed(events[len(events)-1].Data.AsActionRequest()).ID
	requireStatus(t, ts.post("/v1/executions/"+exec.ID+"/actions/"+actionID+":respond", `{"approved":true}`), http.StatusOK)
	for nextEvent().Type != api.StandardEventTypeRunCompleted {
	}
	cancel()
	<-connectDone

	requireSameAsReplay(t, ts, exec.ID, events)
	ids := recorder.lastEventIDs()
	if len(ids) < 2 || ids[0] != "" || ids[1] != "3" {
		t.Fatalf("Last-Event-ID of each connection: %q", ids)
	}
}

// TestSSEOpensBeforeAnyEventIsReady: a stream whose cursor is already at the end of a waiting
// execution has nothing to send, and its headers still go out at once (they are otherwise sent
// with the first batch). The heartbeat is an hour away, so only that flush can open it.
func TestSSEOpensBeforeAnyEventIsReady(t *testing.T) {
	ts := newTestServer(t, Options{Heartbeat: time.Hour})
	exec := ts.start("wait", `{"requireApproval":true}`)
	last := ts.waitForEvent(exec.ID, api.StandardEventTypeActionRequired).Sequence

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	req := ts.newHTTPRequest(ctx, request{method: http.MethodGet, path: fmt.Sprintf("/v1/executions/%s/events?after=%d", exec.ID, last), header: map[string]string{"Accept": sseAccept}})
	resp, err := ts.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("the stream did not open while its execution waits: %v", err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("answer %d with Content-Type %q", resp.StatusCode, ct)
	}
}
