package backend

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/harness-edge/harness-edge/backend/store"
)

// Spans and trace context: the tracer the runtime's spans come from, their names and
// attributes, and W3C traceparent values (what a record keeps and a command carries). What an
// execution records on its span is tracing.go.

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
