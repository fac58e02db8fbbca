package sdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// runRecording runs an execution that needs no answer through g's proxy and returns the result
// and the events the caller saw, after checking they are the stored ones, once each, in order.
func (g *netRig) runRecording(t *testing.T) sdk.RunResult {
	t.Helper()
	var seen []api.RuntimeEvent
	res, err := g.client.Run(bounded(t), g.startReq(api.JSONObject{"delayMs": 1}),
		sdk.RunHandlers{OnEvent: func(e api.RuntimeEvent) { seen = append(seen, e) }})
	if err != nil || !res.Succeeded() || res.Output != "Echo: alpha beta gamma delta" {
		t.Fatalf("Run = %s %q, %v", res.Execution.State, res.Output, err)
	}
	g.exactlyOnce(t, res.Execution.ID, seen)
	return res
}

// Against harness-edge, Run starts and streams in one request, and takes the final snapshot
// from the answer's trailer: no events request, no snapshot request.
func TestRunStartsAndStreamsInOneRequest(t *testing.T) {
	g := newNetRig(t)
	res := g.runRecording(t)
	if g.proxy.seen(routeStartStream) != 1 || g.proxy.seen(routeStart) != 0 || g.proxy.seen(routeStream) != 0 {
		t.Fatalf("Run sent %d streamed starts, %d plain starts, %d event streams; want 1, 0, 0",
			g.proxy.seen(routeStartStream), g.proxy.seen(routeStart), g.proxy.seen(routeStream))
	}
	if n := g.proxy.total(); n != 1 {
		t.Fatalf("Run sent %d requests, want 1 (the streamed start, whose trailer is the final snapshot)", n)
	}
	if res.Replayed || g.srv.created.n.Load() != 1 {
		t.Fatalf("replayed %v, %d executions created", res.Replayed, g.srv.created.n.Load())
	}
	g.requireSnapshot(t, res.Execution)
}

// requireSnapshot asserts that exec is the execution as GET /v1/executions/{id} reads it now.
func (g *netRig) requireSnapshot(t *testing.T, exec api.Execution) {
	t.Helper()
	stored, err := g.client.GetExecution(bounded(t), exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(exec)
	want, _ := json.Marshal(stored)
	if !bytes.Equal(got, want) {
		t.Fatalf("Run's snapshot\n %s\nis not the execution read afterwards\n %s", got, want)
	}
}

// dropTrailers forwards the request and loses the answer's trailers, as some proxies do.
func dropTrailers(p *netProxy, _ string, w http.ResponseWriter, r *http.Request) {
	p.upstream.ServeHTTP(&trailerless{ResponseWriter: w}, r)
}

// trailerless passes an answer through without its trailers (declared or not).
type trailerless struct {
	http.ResponseWriter
	after http.Header // what the handler sets once the header is out: dropped
}

func (t *trailerless) Header() http.Header {
	if t.after != nil {
		return t.after
	}
	return t.ResponseWriter.Header()
}

func (t *trailerless) WriteHeader(code int) {
	t.ResponseWriter.Header().Del("Trailer")
	t.ResponseWriter.WriteHeader(code)
	t.after = http.Header{}
}

func (t *trailerless) Write(p []byte) (int, error) {
	if t.after == nil {
		t.WriteHeader(http.StatusOK)
	}
	return t.ResponseWriter.Write(p)
}

func (t *trailerless) Flush() { http.NewResponseController(t.ResponseWriter).Flush() }

// Through a proxy that drops trailers, Run asks for the final snapshot: same result, one
// request more.
func TestRunAsksForTheSnapshotWhenTheTrailerIsLost(t *testing.T) {
	g := newNetRig(t)
	g.proxy.add("no trailers", on(routeStartStream), -1, dropTrailers)
	res := g.runRecording(t)
	if g.proxy.hits("no trailers") != 1 || g.proxy.total() != 2 || g.proxy.seen(routeStream) != 0 {
		t.Fatalf("%d streamed starts without trailers, %d requests, %d event streams; want 1, 2 (the start, the snapshot), 0",
			g.proxy.hits("no trailers"), g.proxy.total(), g.proxy.seen(routeStream))
	}
	g.requireSnapshot(t, res.Execution)
}

// asReference forwards a start without its Accept header: the server answers 202, as the
// reference and servers without the extension do whatever Accept says.
func asReference(p *netProxy, _ string, w http.ResponseWriter, r *http.Request) {
	r = r.Clone(r.Context())
	r.Header.Del("Accept")
	p.upstream.ServeHTTP(w, r)
}

// Against a server that answers the start with the usual 202, Run follows the execution
// through the events operation, with the same result.
func TestRunFallsBackToStartThenStream(t *testing.T) {
	g := newNetRig(t)
	g.proxy.add("reference", on(routeStartStream), -1, asReference)
	g.run(t, bounded(t)) // asks for an approval, which Run answers
	if g.proxy.hits("reference") != 1 || g.proxy.seen(routeStream) < 1 {
		t.Fatalf("%d starts answered 202, %d event streams; want 1 and at least 1", g.proxy.hits("reference"), g.proxy.seen(routeStream))
	}
	if g.srv.created.n.Load() != 1 {
		t.Fatalf("%d executions created, want 1", g.srv.created.n.Load())
	}
}

// A streamed start cut after its header (so after the id) resumes by cursor through the events
// operation, never with a second start, and the caller sees each event once.
func TestRunResumesACutStartStreamThroughTheEvents(t *testing.T) {
	g := newNetRig(t)
	g.proxy.add("cut", on(routeStartStream), 1, cutBody)
	g.runRecording(t)
	if g.proxy.hits("cut") != 1 || g.proxy.seen(routeStartStream) != 1 || g.proxy.seen(routeStream) < 1 {
		t.Fatalf("%d cut, %d streamed starts, %d event streams; want 1, 1 and at least 1",
			g.proxy.hits("cut"), g.proxy.seen(routeStartStream), g.proxy.seen(routeStream))
	}
	if g.srv.created.n.Load() != 1 {
		t.Fatalf("%d executions created, want 1", g.srv.created.n.Load())
	}
}

// dropBeforeHeader has the server apply the request and answer it, then drops the connection
// before the client sees a byte: the client cannot know the id.
func dropBeforeHeader(p *netProxy, _ string, w http.ResponseWriter, r *http.Request) {
	p.fetch(r)
	panic(http.ErrAbortHandler)
}

// A streamed start whose answer is lost before its header is tried again with the same key:
// the server streams the same execution from sequence 1, and nothing is started twice.
func TestRunRetriesAStartStreamLostBeforeItsHeader(t *testing.T) {
	g := newNetRig(t)
	g.proxy.add("lost", on(routeStartStream), 1, dropBeforeHeader)
	res := g.runRecording(t)
	if g.proxy.hits("lost") != 1 || g.proxy.seen(routeStartStream) != 2 {
		t.Fatalf("%d lost, %d streamed starts; want 1, 2", g.proxy.hits("lost"), g.proxy.seen(routeStartStream))
	}
	if g.srv.created.n.Load() != 1 {
		t.Fatalf("%d executions created, want 1", g.srv.created.n.Load())
	}
	if res.Replayed {
		t.Fatal("Replayed with a key the call generated: the execution is this call's")
	}
}

// Runs with the same idempotency key, all at once, share one execution; each sees all of it.
func TestConcurrentRunsWithOneKeyShareOneExecution(t *testing.T) {
	const runs = 50
	srv := newTestServer(t)
	c := newClient(t, srv.URL)
	conv, err := c.CreateConversation(t.Context(), api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	req := api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "one of many",
		IdempotencyKey: new("job-7"), Config: api.JSONObject{"delayMs": 1}}
	results := make([]sdk.RunResult, runs)
	events := make([]int, runs)
	errs := make([]error, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			results[i], errs[i] = c.Run(bounded(t), req, sdk.RunHandlers{OnEvent: func(api.RuntimeEvent) { events[i]++ }})
		})
	}
	wg.Wait()
	stored, err := c.ListEvents(t.Context(), results[0].Execution.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	started := 0
	for i, res := range results {
		if errs[i] != nil || !res.Succeeded() || res.Execution.ID != results[0].Execution.ID || events[i] != len(stored.Events) {
			t.Fatalf("Run %d: %s %s, %d of %d events, %v", i, res.Execution.ID, res.Execution.State, events[i], len(stored.Events), errs[i])
		}
		if !res.Replayed {
			started++
		}
	}
	if n := srv.created.n.Load(); n != 1 || started != 1 {
		t.Fatalf("%d executions created, %d Runs say they started it; want 1 and 1", n, started)
	}
}

// The generated client still reads the 202 of a plain start, and reads a streamed start's
// headers without trying to decode its body.
func TestGeneratedClientReadsBothStartAnswers(t *testing.T) {
	srv := newTestServer(t)
	c := newClient(t, srv.URL)
	conv, err := c.CreateConversation(t.Context(), api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	gen, err := api.NewClientWithResponses(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	req := api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "hi"}
	plain, err := gen.StartExecutionWithResponse(t.Context(), req)
	if err != nil || plain.StatusCode() != http.StatusAccepted || plain.JSON202 == nil || plain.JSON202.State != api.ExecutionStateQueued {
		t.Fatalf("plain start: %v, %+v", err, plain)
	}
	streamed, err := gen.StartExecutionWithResponse(t.Context(), req, func(_ context.Context, r *http.Request) error {
		r.Header.Set("Accept", "text/event-stream, application/json")
		return nil
	})
	if err != nil || streamed.StatusCode() != http.StatusOK || streamed.JSON202 != nil || streamed.Headers200 == nil {
		t.Fatalf("streamed start: %v, %+v", err, streamed)
	}
	id := streamed.Headers200.HarnessExecutionID
	if !strings.HasPrefix(id, "exec_") || streamed.Headers200.Location != "/v1/executions/"+id ||
		!strings.Contains(string(streamed.Body), "event: run.queued\n") {
		t.Fatalf("streamed start: headers %+v, body %q", streamed.Headers200, streamed.Body)
	}
}

// Through a proxy that passes the whole stream but then holds the connection open (the answer
// never ends, so no trailer comes), Run stops waiting for the end shortly after the terminal
// event, leaves the connection and asks for the snapshot.
func TestRunLeavesAStartStreamThatDoesNotEnd(t *testing.T) {
	g := newNetRig(t)
	g.proxy.add("held open", on(routeStartStream), -1, editFrames(dropEvents("no such event"), true))
	res := g.runRecording(t)
	if g.proxy.hits("held open") != 1 || g.proxy.total() != 2 || g.proxy.seen(routeStream) != 0 {
		t.Fatalf("%d streamed starts held open, %d requests, %d event streams; want 1, 2 (the start, the snapshot), 0",
			g.proxy.hits("held open"), g.proxy.total(), g.proxy.seen(routeStream))
	}
	g.requireSnapshot(t, res.Execution)
}
