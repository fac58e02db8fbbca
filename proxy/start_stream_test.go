package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// streamAccept is what the Go SDK sends to start and stream in one request.
const streamAccept = "text/event-stream, application/json"

// startStreamBody is a start request for the mock provider in conversation conv.
func startStreamBody(conv, input, extra string) string {
	return fmt.Sprintf(`{"conversationId":%q,"providerId":"mock","input":%q%s}`, conv, input, extra)
}

// postStart sends a start with the given Accept (none when empty), reads the answer whole (a
// streamed start ends after the terminal event) and validates it against harness.yaml.
func (ts *testServer) postStart(body, accept string) result {
	ts.t.Helper()
	req := request{method: http.MethodPost, path: "/v1/executions", body: &body}
	if accept != "" {
		req.header = map[string]string{"Accept": accept}
	}
	return ts.do(req)
}

// streamedEvents parses an SSE body into its events, checking the framing of each.
func streamedEvents(t *testing.T, body []byte) []api.RuntimeEvent {
	t.Helper()
	var events []api.RuntimeEvent
	for raw, err := range sse.Read(bytes.NewReader(body), nil) {
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		var ev api.RuntimeEvent
		if err := json.Unmarshal([]byte(raw.Data), &ev); err != nil {
			t.Fatalf("event data %q: %v", raw.Data, err)
		}
		if raw.Type != string(ev.Type) || raw.LastEventID != strconv.FormatInt(ev.Sequence, 10) {
			t.Fatalf("framing event=%q id=%q does not match %+v", raw.Type, raw.LastEventID, ev)
		}
		events = append(events, ev)
	}
	return events
}

// requireWholeExecution asserts that events are the execution's stored events from sequence 1
// to its terminal event, run.queued first, equal to the JSON replay.
func (ts *testServer) requireWholeExecution(id string, events []api.RuntimeEvent) {
	ts.t.Helper()
	if len(events) == 0 || events[0].Type != api.StandardEventTypeRunQueued || events[0].Sequence != 1 {
		ts.t.Fatalf("stream does not begin with run.queued at sequence 1: %+v", events)
	}
	for i, ev := range events {
		if ev.ExecutionID != id || ev.Sequence != int64(i+1) {
			ts.t.Fatalf("event %d is %s #%d, want %s #%d", i, ev.ExecutionID, ev.Sequence, id, i+1)
		}
	}
	if last := events[len(events)-1].Type; last != api.StandardEventTypeRunCompleted {
		ts.t.Fatalf("stream ends with %s, want run.completed", last)
	}
	stored := ts.eventList(id, "")
	want, _ := json.Marshal(stored.Events)
	got, _ := json.Marshal(events)
	if !bytes.Equal(got, want) {
		ts.t.Fatalf("streamed events differ from the stored ones:\n got %s\nwant %s", got, want)
	}
}

func TestStartStreamStreamsTheExecutionFromRunQueued(t *testing.T) {
	ts := newTestServer(t, Options{Heartbeat: 2500 * time.Millisecond})
	conv := ts.createConversation()
	res := ts.postStart(startStreamBody(conv, "hello runtime", ""), streamAccept)
	requireStatus(t, res, http.StatusOK)
	if ct := res.header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	id := res.header.Get("Harness-Execution-Id")
	if !strings.HasPrefix(id, "exec_") {
		t.Fatalf("Harness-Execution-Id = %q", id)
	}
	if loc := res.header.Get("Location"); loc != "/v1/executions/"+id {
		t.Fatalf("Location = %q, want /v1/executions/%s", loc, id)
	}
	if res.header.Get("Idempotent-Replayed") != "" {
		t.Fatal("a new execution is marked as replayed")
	}
	if got := res.header.Get("Cache-Control"); got != "no-cache" {
		t.Fatalf("Cache-Control = %q, want the events route's no-cache", got)
	}
	if got := res.header.Get("Harness-Heartbeat-Ms"); got != "2500" {
		t.Fatalf("Harness-Heartbeat-Ms = %q, want the configured heartbeat, 2500", got)
	}
	ts.requireWholeExecution(id, streamedEvents(t, res.body))
	if exec := ts.execution(id); exec.ConversationID != conv || exec.State != api.ExecutionStateSucceeded {
		t.Fatalf("execution %+v", exec)
	}
}

// A streamed start ends with the trailer Harness-Execution: the final snapshot, byte for byte
// the body GET /v1/executions/{id} answers (non-ASCII output included), so a client needs no
// second request for it.
func TestStartStreamEndsWithTheFinalSnapshotTrailer(t *testing.T) {
	ts := newTestServer(t, Options{})
	conv := ts.createConversation()
	res := ts.postStart(startStreamBody(conv, "héllo ✓ \"runtime\"", ""), streamAccept)
	requireStatus(t, res, http.StatusOK)
	if _, declared := res.trailer["Harness-Execution"]; !declared {
		t.Fatalf("Harness-Execution is not declared as a trailer (trailers %v)", res.trailer)
	}
	id := res.header.Get("Harness-Execution-Id")
	ts.requireWholeExecution(id, streamedEvents(t, res.body))
	snapshot := ts.get("/v1/executions/" + id)
	requireStatus(t, snapshot, http.StatusOK)
	if got := res.trailer.Get("Harness-Execution"); got != string(snapshot.body) {
		t.Fatalf("trailer Harness-Execution = %q\nwant the GET body %s", got, snapshot.body)
	}
}

// A snapshot too large for a header is not put in the trailer: the client asks for it.
func TestStartStreamLeavesALargeSnapshotOutOfTheTrailer(t *testing.T) {
	ts := newTestServer(t, Options{})
	conv := ts.createConversation()
	res := ts.postStart(startStreamBody(conv, strings.Repeat("word ", 4000), ""), streamAccept)
	requireStatus(t, res, http.StatusOK)
	id := res.header.Get("Harness-Execution-Id")
	ts.requireWholeExecution(id, streamedEvents(t, res.body))
	if got := res.trailer.Get("Harness-Execution"); got != "" {
		t.Fatalf("a %d-byte snapshot went into the trailer", len(got))
	}
}

func TestStartStreamReplayStreamsTheOriginalExecution(t *testing.T) {
	ts := newTestServer(t, Options{})
	conv := ts.createConversation()
	body := startStreamBody(conv, "once", `,"idempotencyKey":"order-42"`)
	first := ts.postStart(body, streamAccept)
	requireStatus(t, first, http.StatusOK)
	id := first.header.Get("Harness-Execution-Id")

	again := ts.postStart(body, "text/event-stream")
	requireStatus(t, again, http.StatusOK)
	if got := again.header.Get("Harness-Execution-Id"); got != id {
		t.Fatalf("replay streams %s, want the original %s", got, id)
	}
	if again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("Idempotent-Replayed = %q on a replay", again.header.Get("Idempotent-Replayed"))
	}
	if !bytes.Equal(again.body, first.body) {
		t.Fatalf("the replay's stream differs from the original's:\n got %s\nwant %s", again.body, first.body)
	}
	ts.requireWholeExecution(id, streamedEvents(t, again.body))
	if list := ts.eventList(id, ""); len(list.Events) == 0 || list.Events[len(list.Events)-1].Sequence != int64(len(list.Events)) {
		t.Fatalf("events of %s: %+v", id, list.Events)
	}
}

// Every refused start is the same JSON Problem whether or not the client asked for a stream.
func TestStartStreamRefusalsAreTheJSONProblems(t *testing.T) {
	ts := newTestServer(t, Options{})
	conv := ts.createConversation()
	taken := startStreamBody(conv, "first", `,"idempotencyKey":"k"`)
	requireStatus(t, ts.postStart(taken, ""), http.StatusAccepted)
	cases := map[string]struct {
		body   string
		status int
	}{
		"no body":              {"", http.StatusBadRequest},
		"not JSON":             {"{", http.StatusBadRequest},
		"invalid request":      {`{"conversationId":1}`, http.StatusBadRequest},
		"unknown conversation": {startStreamBody("conv_missing", "x", ""), http.StatusNotFound},
		"unknown provider":     {strings.Replace(startStreamBody(conv, "x", ""), `"mock"`, `"nope"`, 1), http.StatusNotFound},
		"unsupported capability": {startStreamBody(conv, "x", `,"requiredCapabilities":["no.such.thing"]`),
			http.StatusUnprocessableEntity},
		"idempotency conflict": {startStreamBody(conv, "second", `,"idempotencyKey":"k"`), http.StatusConflict},
		"too large":            {startStreamBody(conv, strings.Repeat("x", 2<<20), ""), http.StatusRequestEntityTooLarge},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			plain := ts.postStart(c.body, "")
			streamed := ts.postStart(c.body, streamAccept)
			requireStatus(t, plain, c.status)
			requireStatusBody(t, streamed, c.status, string(plain.body))
			if streamed.header.Get("Harness-Execution-Id") != "" {
				t.Fatal("a refused start names an execution")
			}
		})
	}
}

// A client that does not prefer the stream gets today's 202, byte for byte. The execution waits
// for an approval, so its snapshot holds still and every replay of it can be compared.
func TestStartStreamJSONAcceptKeepsThe202(t *testing.T) {
	ts := newTestServer(t, Options{})
	conv := ts.createConversation()
	body := startStreamBody(conv, "wait", `,"config":{"requireApproval":true},"idempotencyKey":"held"`)
	requireStatus(t, ts.postStart(body, ""), http.StatusAccepted)
	want := ts.postStart(body, "")
	exec := decodeBody[api.Execution](t, want)
	ts.waitForEvent(exec.ID, api.StandardEventTypeActionRequired)
	want = ts.postStart(body, "")
	requireStatus(t, want, http.StatusAccepted)
	for _, accept := range []string{
		"application/json",
		"*/*",
		"application/json, text/event-stream;q=0.5",
		"text/event-stream;q=0",
		"application/*;q=0.9, text/event-stream;q=0.8",
		"text/html",
	} {
		got := ts.postStart(body, accept)
		if got.status != want.status || !bytes.Equal(got.body, want.body) {
			t.Fatalf("Accept %q: got %s\nwant %s", accept, got, want)
		}
		if got.header.Get("Content-Type") != want.header.Get("Content-Type") ||
			got.header.Get("Idempotent-Replayed") != "true" || got.header.Get("Harness-Execution-Id") != "" {
			t.Fatalf("Accept %q: headers %v, want those of %v", accept, got.header, want.header)
		}
	}
}

func TestPrefersEventStream(t *testing.T) {
	for accept, want := range map[string]bool{
		"":                                    false,
		"text/event-stream":                   true,
		"TEXT/Event-Stream":                   true,
		"text/event-stream, application/json": true,
		"application/json, text/event-stream": true, // equal quality: the stream
		"application/json;q=0.9, text/event-stream": true,
		"application/json, text/event-stream;q=0.5": false,
		"text/event-stream;q=0":                     false,
		"text/event-stream;q=abc":                   false,
		"*/*":                                       false,
		"*/*, text/event-stream":                    true,
		"*/*;q=0.1, application/json;q=0.2, text/event-stream;q=0.15": false, // application/json is the more specific
		"application/json;q=0, */*, text/event-stream;q=0.5":          true,  // JSON refused outright
		"text/event-streamx": false,
	} {
		h := http.Header{}
		if accept != "" {
			h.Set("Accept", accept)
		}
		if got := prefersEventStream(h); got != want {
			t.Errorf("prefersEventStream(%q) = %v, want %v", accept, got, want)
		}
	}
}
