package backend_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/internal/testutil"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/webhook"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// endedSpan waits for the recorder to hold an ended span named name.
func endedSpan(t *testing.T, rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	deadline := time.Now().Add(testTimeout) // hang guard
	for time.Now().Before(deadline) {
		for _, s := range rec.Ended() {
			if s.Name() == name {
				return s
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no ended span %q", name)
	return nil
}

func attrs(s sdktrace.ReadOnlySpan) map[string]string {
	out := map[string]string{}
	for _, a := range s.Attributes() {
		out[string(a.Key)] = a.Value.Emit()
	}
	return out
}

// The execution span is a child of the start request's span, lives until the terminal event,
// records every event (type, sequence) and the final state, and is the parent of what the
// provider does.
func TestExecutionSpanFollowsTheExecution(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	var providerParent trace.SpanContext
	p := &scripted{run: func(ctx context.Context, run *backend.Run) (backend.Result, error) {
		_, child := trace.SpanFromContext(ctx).TracerProvider().Tracer("test").Start(ctx, "provider.work")
		providerParent = trace.SpanFromContext(ctx).SpanContext()
		child.End()
		if err := run.EmitText("hi"); err != nil {
			return backend.Result{}, err
		}
		return backend.Result{FinalOutput: "hi"}, nil
	}}
	rt := scriptedRuntime(t, backend.Options{TracerProvider: tp}, p)
	tenantCtx := backend.WithTenant(ctxT(t), backend.Tenant{ID: "acme"})
	conv, err := rt.CreateConversation(tenantCtx, nil)
	if err != nil {
		t.Fatal(err)
	}
	reqCtx, request := tp.Tracer("test").Start(tenantCtx, "request")
	exec, _, err := rt.StartExecution(reqCtx, startReq(conv.ID, startOpts{provider: "scripted"}))
	request.End()
	if err != nil {
		t.Fatal(err)
	}
	events := follow(t, rt, tenantCtx, exec.ID)

	span := endedSpan(t, rec, "harness.execution")
	if span.Parent().SpanID() != request.SpanContext().SpanID() || span.SpanContext().TraceID() != request.SpanContext().TraceID() {
		t.Errorf("execution span's parent = %v, want the request span %v", span.Parent(), request.SpanContext())
	}
	want := map[string]string{
		"harness.execution.id": exec.ID, "harness.provider.id": "scripted",
		"harness.tenant": "acme", "harness.execution.state": "succeeded",
	}
	got := attrs(span)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("attribute %s = %q, want %q", k, got[k], v)
		}
	}
	if len(span.Events()) != len(events) {
		t.Fatalf("%d span events, want one per event (%d)", len(span.Events()), len(events))
	}
	for i, e := range span.Events() {
		if e.Name != string(events[i].Type) || len(e.Attributes) != 1 || e.Attributes[0].Value.AsInt64() != events[i].Sequence {
			t.Errorf("span event %d = %s %v, want %s sequence %d", i, e.Name, e.Attributes, events[i].Type, events[i].Sequence)
		}
	}
	if !providerParent.Equal(span.SpanContext()) {
		t.Errorf("the provider's context carries span %v, want the execution span %v", providerParent, span.SpanContext())
	}
	child := endedSpan(t, rec, "provider.work")
	if child.Parent().SpanID() != span.SpanContext().SpanID() {
		t.Errorf("provider span's parent = %v, want the execution span", child.Parent())
	}
}

// follow is collect as a tenant.
func follow(t *testing.T, rt *backend.Runtime, ctx context.Context, id string) []api.RuntimeEvent {
	t.Helper()
	var out []api.RuntimeEvent
	for e, err := range backend.FollowExecution(ctx, rt, id, 0) {
		if err != nil {
			t.Fatalf("Follow %s: %v", id, err)
		}
		out = append(out, decode(t, e))
	}
	return out
}

// A log line about an execution carries execution_id, tenant and trace_id; with tracing off,
// execution_id and tenant.
func TestExecutionLogLinesCarryTraceFields(t *testing.T) {
	for _, traced := range []bool{true, false} {
		t.Run(map[bool]string{true: "traced", false: "tracing off"}[traced], func(t *testing.T) {
			logLinesCarryTraceFields(t, traced)
		})
	}
}

func logLinesCarryTraceFields(t *testing.T, traced bool) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	var out testutil.LockedBuffer
	log := slog.New(slog.NewJSONHandler(&out, nil))
	p := &scripted{run: func(context.Context, *backend.Run) (backend.Result, error) { panic("boom") }}
	opts := backend.Options{Logger: log}
	if traced {
		opts.TracerProvider = tp
	}
	rt := scriptedRuntime(t, opts, p)
	tenantCtx := backend.WithTenant(ctxT(t), backend.Tenant{ID: "acme"})
	conv, err := rt.CreateConversation(tenantCtx, nil)
	if err != nil {
		t.Fatal(err)
	}
	exec, _, err := rt.StartExecution(tenantCtx, startReq(conv.ID, startOpts{provider: "scripted"}))
	if err != nil {
		t.Fatal(err)
	}
	follow(t, rt, tenantCtx, exec.ID)
	wantTraceID := ""
	if traced {
		wantTraceID = endedSpan(t, rec, "harness.execution").SpanContext().TraceID().String()
	}

	for line := range strings.Lines(out.String()) {
		var fields map[string]any
		if err := json.Unmarshal([]byte(line), &fields); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if fields["msg"] != "provider panicked" {
			continue
		}
		traceID, _ := fields["trace_id"].(string)
		if fields["execution_id"] != exec.ID || fields["tenant"] != "acme" || traceID != wantTraceID {
			t.Fatalf("log line %s: want execution_id %s, tenant acme, trace_id %q", line, exec.ID, wantTraceID)
		}
		if _, ok := fields["execution"]; ok {
			t.Errorf("log line %s still names the execution twice", line)
		}
		if traced {
			if got := attrs(endedSpan(t, rec, "harness.execution"))["harness.execution.state"]; got != string(api.ExecutionStateFailed) {
				t.Errorf("state attribute %q, want failed", got)
			}
		} else if n := len(rec.Ended()); n != 0 {
			t.Errorf("%d spans recorded with tracing off", n)
		}
		return
	}
	t.Fatalf("no 'provider panicked' line in the log:\n%s", out.String())
}

// A webhook delivery is a span of its own trace linked to the execution's span, and the
// receiver gets the delivery's traceparent.
func TestWebhookDeliveryIsLinkedToTheExecutionTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	var mu sync.Mutex
	var traceparents []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		traceparents = append(traceparents, r.Header.Get("traceparent"))
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	hooks := notifier(t, webhook.Config{TracerProvider: tp, Subscriptions: []webhook.Subscription{{
		URL: srv.URL, Secret: webhookSecret, Events: []string{"run.completed"},
	}}})
	rt := openRuntime(t, "", backend.Options{TracerProvider: tp, Webhooks: hooks})
	conv := newConversation(t, rt)
	reqCtx, request := tp.Tracer("test").Start(ctxT(t), "request")
	exec, _, err := rt.StartExecution(reqCtx, startReq(conv, startOpts{input: "hello"}))
	request.End()
	if err != nil {
		t.Fatal(err)
	}
	collect(t, rt, exec.ID, 0)
	execution := endedSpan(t, rec, "harness.execution")
	delivery := endedSpan(t, rec, "harness.webhook.deliver")

	if delivery.SpanContext().TraceID() == execution.SpanContext().TraceID() {
		t.Error("the delivery is in the execution's trace; want a trace of its own, linked")
	}
	links := delivery.Links()
	if len(links) != 1 || links[0].SpanContext.TraceID() != execution.SpanContext().TraceID() ||
		links[0].SpanContext.SpanID() != execution.SpanContext().SpanID() {
		t.Errorf("delivery links %v, want the execution span %v", links, execution.SpanContext())
	}
	mu.Lock()
	defer mu.Unlock()
	want := "00-" + delivery.SpanContext().TraceID().String() + "-" + delivery.SpanContext().SpanID().String() + "-01"
	if len(traceparents) != 1 || traceparents[0] != want {
		t.Errorf("the receiver got traceparent %q, want the delivery's %q", traceparents, want)
	}
}

// With tracing off nothing is recorded, but a caller's trace context still reaches the
// provider (for an agent's TRACEPARENT, or an upstream), as W3C Trace Context asks of every hop.
func TestTracingOffStillPassesTheCallersContextOn(t *testing.T) {
	seen := make(chan string, 1)
	p := &scripted{run: func(ctx context.Context, run *backend.Run) (backend.Result, error) {
		seen <- backend.TraceParent(ctx)
		return backend.Result{}, nil
	}}
	rt := scriptedRuntime(t, optsNone(), p)
	conv := newConversation(t, rt)
	caller := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled, Remote: true})
	ctx := trace.ContextWithRemoteSpanContext(ctxT(t), caller)
	if _, _, err := rt.StartExecution(ctx, startReq(conv, startOpts{provider: "scripted"})); err != nil {
		t.Fatal(err)
	}
	if got, want := <-seen, "00-01020300000000000000000000000000-0405060000000000-01"; got != want {
		t.Errorf("the provider's context carries traceparent %q, want the caller's %q", got, want)
	}
}

// An execution resumed after a restart gets a new execution span in the trace it started in:
// the record keeps its span's traceparent.
func TestResumedExecutionStaysInItsTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	dir := t.TempDir()
	p := &resumable{scripted: scripted{id: "resumable", run: firstRun}, resume: resumeRun}
	rt := openRuntime(t, dir, backend.Options{Providers: []backend.Provider{p}, TracerProvider: tp})
	conv := newConversation(t, rt)
	reqCtx, request := tp.Tracer("test").Start(ctxT(t), "request")
	exec, _, err := rt.StartExecution(reqCtx, startReq(conv, startOpts{provider: "resumable", input: "go"}))
	request.End()
	if err != nil {
		t.Fatal(err)
	}
	waitForEvent(t, rt, exec.ID, api.StandardEventTypeOutputTextDelta)
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}

	first := endedSpan(t, rec, "harness.execution")
	if got := attrs(first); got["harness.execution.unfinished"] != "true" {
		t.Errorf("the span of the execution Close left unfinished: attributes %v, want harness.execution.unfinished", got)
	}

	rt2 := openRuntime(t, dir, backend.Options{Providers: []backend.Provider{p}, TracerProvider: tp})
	collect(t, rt2, exec.ID, 0)
	var resumed sdktrace.ReadOnlySpan
	eventually(t, "the resumed execution's span", func() bool {
		for _, s := range rec.Ended() {
			if s.Name() == "harness.execution" && s.SpanContext().SpanID() != first.SpanContext().SpanID() {
				resumed = s
				return true
			}
		}
		return false
	})
	if resumed.SpanContext().TraceID() != request.SpanContext().TraceID() || resumed.Parent().SpanID() != first.SpanContext().SpanID() {
		t.Errorf("the resumed execution's span is in trace %s under %s, want the start's %s under the first span %s",
			resumed.SpanContext().TraceID(), resumed.Parent().SpanID(), request.SpanContext().TraceID(), first.SpanContext().SpanID())
	}
	got := attrs(resumed)
	if got["harness.execution.resumed"] != "true" || got["harness.execution.state"] != "succeeded" || got["harness.execution.id"] != exec.ID {
		t.Errorf("resumed span attributes %v", got)
	}
}

// A start refused before it became an execution (here: the tenant's bound on running
// executions) ends its span at once, marked refused with the refusal as its status: an
// unended span would never be exported, and the caller's trace would not say why.
func TestRefusedStartEndsItsSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	rt := scriptedRuntime(t, backend.Options{TracerProvider: tp}, &scripted{run: blockUntilCancelled})
	limited := backend.WithTenant(ctxT(t), backend.Tenant{ID: "acme", MaxRunning: 1})
	conv, err := rt.CreateConversation(limited, nil)
	if err != nil {
		t.Fatal(err)
	}
	first, _, err := rt.StartExecution(limited, startReq(conv.ID, startOpts{provider: "scripted"}))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.CancelExecution(ctxT(t), first.ID, nil)
	_, _, err = rt.StartExecution(limited, startReq(conv.ID, startOpts{provider: "scripted"}))
	wantCode(t, err, backend.CodeRateLimited, "")
	span := endedSpan(t, rec, "harness.execution")
	if got := attrs(span)["harness.execution.refused"]; got != "true" {
		t.Fatalf("the refused start's span has refused=%q; attributes %v", got, attrs(span))
	}
	if span.Status().Description == "" {
		t.Fatal("the refused start's span has no status description")
	}
}
