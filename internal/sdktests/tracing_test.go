package sdk_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/proxy"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// traceparentRecorder keeps the traceparent header of every request it passes on.
type traceparentRecorder struct {
	next http.Handler
	mu   sync.Mutex
	seen []string // "METHOD path?query traceparent"
	tp   []string
}

func (t *traceparentRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t.mu.Lock()
	t.seen = append(t.seen, r.Method+" "+r.URL.RequestURI())
	t.tp = append(t.tp, r.Header.Get("traceparent"))
	t.mu.Unlock()
	t.next.ServeHTTP(w, r)
}

// Every request of a Run carries the caller's trace context, the stream reconnects too, and
// each reconnect and each gap filled from the replay is an event of the caller's span.
func TestRunPropagatesTheCallersTraceAcrossReconnects(t *testing.T) {
	rt, err := local.Open(t.TempDir(), backend.Options{Providers: []backend.Provider{mock.New()}})
	if err != nil {
		t.Fatal(err)
	}
	h := proxy.New(rt, proxy.Options{})
	// The server cuts the first two streams after two events each: two reconnects.
	recorder := &traceparentRecorder{next: &forgetfulServer{next: h, cuts: []int{2, 2}, sent: map[int64]int{}}}
	hs := httptest.NewServer(recorder)
	t.Cleanup(func() { h.Shutdown(); hs.Close(); _ = rt.Close() })

	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	client := newClient(t, hs.URL)
	ctx, caller := tp.Tracer("test").Start(bounded(t), "caller")
	conv, err := client.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := client.Run(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock",
		Input: "alpha beta gamma delta", Config: api.JSONObject{"requireApproval": true}}, approve)
	caller.End()
	if err != nil || !res.Succeeded() {
		t.Fatalf("Run = %+v, %v", res.Execution, err)
	}

	traceID := caller.SpanContext().TraceID().String()
	spanID := caller.SpanContext().SpanID().String()
	want := "00-" + traceID + "-" + spanID + "-01"
	recorder.mu.Lock()
	streams := 0
	for i, got := range recorder.tp {
		if got != want {
			t.Errorf("request %s carried traceparent %q, want the caller's %q", recorder.seen[i], got, want)
		}
		if recorder.seen[i] == "GET /v1/executions/"+res.Execution.ID+"/events?after=2" || recorder.seen[i] == "GET /v1/executions/"+res.Execution.ID+"/events?after=4" {
			streams++
		}
	}
	recorder.mu.Unlock()
	if streams == 0 {
		t.Errorf("no reconnect seen among %v", recorder.seen)
	}

	ended := spans.Ended()
	if len(ended) != 1 {
		t.Fatalf("%d spans ended, want only the caller's: a reconnect is not a trace of its own", len(ended))
	}
	reconnects := 0
	for _, e := range ended[0].Events() {
		if e.Name == "harness.stream.reconnect" {
			reconnects++
		}
	}
	if reconnects < 2 {
		t.Errorf("the caller's span has %d reconnect events, want one per cut (2): %v", reconnects, ended[0].Events())
	}
}

// An event recovered from the replay (the stream lost it) is a gap_filled event of the
// caller's span.
func TestGapFilledFromTheReplayIsASpanEvent(t *testing.T) {
	g := newNetRig(t)
	g.proxy.add("lose action.required", onStream, -1, editFrames(dropEvents("action.required"), false))
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, caller := tp.Tracer("test").Start(bounded(t), "caller")
	g.run(t, ctx)
	caller.End()
	filled := 0
	for _, e := range spans.Ended()[0].Events() {
		if e.Name == "harness.stream.gap_filled" {
			filled++
		}
	}
	if filled == 0 {
		t.Errorf("no gap_filled event on the caller's span: %v", spans.Ended()[0].Events())
	}
}
