package backend

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/harness-edge/harness-edge/backend/store"
)

// Tracing (OpenTelemetry). Each execution has one span, "harness.execution", from its start to
// its terminal event, whose parent is the span of the request that started it (the caller's
// trace, continued by the HTTP edge). Every committed event is an event of that span (its type,
// and its sequence as an attribute), however many requests follow the execution. Providers find
// the span in the context Run gets, so their own spans (an ACP prompt turn, a request upstream)
// are its children.
//
// The runtime only uses the OpenTelemetry API: who exports, where, and how often it samples is
// the program's choice (Options.TracerProvider; the Caddy module configures it from the
// standard OTEL_* variables). With the default no-op provider an execution gets no span at all
// unless its start request brought a caller's trace context, which is then passed on (to the
// provider's context, so to an agent's TRACEPARENT or an upstream) without being recorded; every
// hook below returns at its first test.

// TracerName is the instrumentation scope of the runtime's spans.
const TracerName = "github.com/harness-edge/harness-edge/backend"

// The attributes of the execution span, also used by providers and the edge.
const (
	AttrExecutionID    = attribute.Key("harness.execution.id")
	AttrProviderID     = attribute.Key("harness.provider.id")
	AttrTenant         = attribute.Key("harness.tenant")
	AttrExecutionState = attribute.Key("harness.execution.state")
	AttrEventSequence  = attribute.Key("harness.event.sequence")
	AttrResumed        = attribute.Key("harness.execution.resumed")
	AttrUnfinished     = attribute.Key("harness.execution.unfinished")
	// AttrRefused marks the span of a start refused before it became an execution.
	AttrRefused = attribute.Key("harness.execution.refused")
)

// traceContext is W3C Trace Context, the one format the runtime writes and reads: the
// execution record's traceParent and the context a cluster command carries.
var traceContext propagation.TraceContext

// executionSpans makes the spans of executions (Runtime.spans).
type executionSpans struct {
	tracer trace.Tracer
	// off: Options.TracerProvider is the no-op one; spans are made only to pass a caller's
	// context on.
	off bool
}

func newExecutionSpans(tp trace.TracerProvider) executionSpans {
	return executionSpans{tracer: tp.Tracer(TracerName), off: isNoopTracerProvider(tp)}
}

// isNoopTracerProvider reports OpenTelemetry's no-op provider (Options' default): the runtime
// then makes spans only to pass a caller's context on.
func isNoopTracerProvider(tp trace.TracerProvider) bool {
	_, off := tp.(noop.TracerProvider)
	return off
}

// start opens the span of a new execution as a child of ctx's span (the start
// request) and keeps its traceparent in the record, so that a resumed execution, another node
// taking it over and its webhook deliveries can join the same trace.
func (t executionSpans) start(ctx context.Context, rec *store.Execution) trace.Span {
	if t.off && !trace.SpanContextFromContext(ctx).IsValid() {
		return nil // nothing to record and no caller's context to pass on: no allocation
	}
	_, span := t.tracer.Start(ctx, "harness.execution", trace.WithSpanKind(trace.SpanKindInternal))
	if span.IsRecording() {
		span.SetAttributes(
			AttrExecutionID.String(rec.Execution.ID),
			AttrProviderID.String(rec.Execution.ProviderID),
			AttrTenant.String(rec.Tenant))
		rec.TraceParent = traceParentOf(span.SpanContext())
	}
	return span
}

// resume opens the span of an execution this process took over (a restart, or
// another node's lease): a new span in the trace of the record's traceparent, if it has one.
func (t executionSpans) resume(rec store.Execution) trace.Span {
	if t.off && rec.TraceParent == "" {
		return nil
	}
	ctx := contextWithTraceParent(context.Background(), rec.TraceParent)
	_, span := t.tracer.Start(ctx, "harness.execution", trace.WithSpanKind(trace.SpanKindInternal))
	if span.IsRecording() {
		span.SetAttributes(
			AttrExecutionID.String(rec.Execution.ID),
			AttrProviderID.String(rec.Execution.ProviderID),
			AttrTenant.String(rec.Tenant),
			AttrResumed.Bool(true))
	}
	return span
}

// attachSpan makes span (nil: none) the execution's: its events are recorded on it, and the
// provider's context carries it. tenant is kept for log lines (tracing_log.go). Called before
// the execution's first change is submitted and before its goroutine starts.
func (x *execution) attachSpan(span trace.Span, tenant string) {
	x.logTenant = tenant
	if span == nil {
		return
	}
	x.span = span
	x.runCtx = trace.ContextWithSpan(x.runCtx, span)
}

// traceCommitted records a committed change on the execution's span: its events, and, when
// the change is terminal, the final state, after which the span ends. It runs on the store's
// commit goroutine, in commit order, right after the change is published.
func (x *execution) traceCommitted(rec *store.Execution, events []Event) {
	span := x.span
	if span == nil || !span.IsRecording() {
		return
	}
	for _, e := range events {
		span.AddEvent(string(e.Type), trace.WithAttributes(AttrEventSequence.Int64(e.Sequence)))
	}
	if rec == nil || !rec.Execution.State.Terminal() {
		return
	}
	span.SetAttributes(AttrExecutionState.String(string(rec.Execution.State)))
	if e := rec.Execution.Error; e != nil && rec.Execution.State == "failed" {
		span.SetStatus(codes.Error, e.Message)
	}
	span.End()
}

// endSpanLeft ends the span of an execution this process leaves unfinished (the runtime
// closes, or another node took its lease), marked harness.execution.unfinished, so the trace
// shows it up to here; the process that resumes or fails it continues the trace in a span of its
// own (resumeExecutionSpan).
func (x *execution) endSpanLeft() {
	if x.span == nil || !x.span.IsRecording() {
		return
	}
	x.span.SetAttributes(AttrUnfinished.Bool(true))
	x.span.End()
}

// endSpanRefused ends the span of a start that never became an execution (refused before or
// by its first commit: rate limited, fenced, the store unavailable), with the refusal as its
// status, so the caller's trace shows why.
func (x *execution) endSpanRefused(err error) {
	if x.span == nil || !x.span.IsRecording() {
		return
	}
	x.span.SetAttributes(AttrRefused.Bool(true))
	x.span.SetStatus(codes.Error, err.Error())
	x.span.End()
}

// traceID is the execution's trace id for log lines, "" when it is not traced.
func (x *execution) traceID() string {
	if x.span == nil {
		return ""
	}
	if sc := x.span.SpanContext(); sc.IsValid() {
		return sc.TraceID().String()
	}
	return ""
}

// traceParentOf is the W3C traceparent header value of sc.
func traceParentOf(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	carrier := propagation.MapCarrier{}
	traceContext.Inject(trace.ContextWithSpanContext(context.Background(), sc), carrier)
	return carrier["traceparent"]
}

// ContextWithTraceParent returns ctx with the remote span context of a traceparent value
// (unchanged when it is empty or malformed): the parent of what a node does for a command
// another node posted with it (package cluster).
func ContextWithTraceParent(ctx context.Context, traceParent string) context.Context {
	return contextWithTraceParent(ctx, traceParent)
}

func contextWithTraceParent(ctx context.Context, traceParent string) context.Context {
	if traceParent == "" {
		return ctx
	}
	return traceContext.Extract(ctx, propagation.MapCarrier{"traceparent": traceParent})
}

// TraceParent is the traceparent of ctx's span ("" when it has none): what a provider puts in
// an agent subprocess's TRACEPARENT variable, or a command carries to another node.
func TraceParent(ctx context.Context) string {
	return traceParentOf(trace.SpanContextFromContext(ctx))
}
