package backend

import (
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

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

// executionSpan is a live execution's span, nil when it has none: set (attachSpan) before
// its first change is submitted and its goroutine starts, read without a lock after.
type executionSpan struct {
	span trace.Span
}

// traceCommitted records a committed change on the execution's span: its events, and, when
// the change is terminal, the final state, after which the span ends. It runs on the store's
// commit goroutine, in commit order, right after the change is published.
func (t *executionSpan) traceCommitted(rec *store.Execution, events []Event) {
	span := t.span
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
// own (executionSpans.resume).
func (t *executionSpan) endSpanLeft() {
	if t.span == nil || !t.span.IsRecording() {
		return
	}
	t.span.SetAttributes(AttrUnfinished.Bool(true))
	t.span.End()
}

// endSpanRefused ends the span of a start that never became an execution (refused before or
// by its first commit: rate limited, fenced, the store unavailable), with the refusal as its
// status, so the caller's trace shows why.
func (t *executionSpan) endSpanRefused(err error) {
	if t.span == nil || !t.span.IsRecording() {
		return
	}
	t.span.SetAttributes(AttrRefused.Bool(true))
	t.span.SetStatus(codes.Error, err.Error())
	t.span.End()
}

// traceID is the execution's trace id for log lines, "" when it is not traced.
func (t *executionSpan) traceID() string {
	if t.span == nil {
		return ""
	}
	if sc := t.span.SpanContext(); sc.IsValid() {
		return sc.TraceID().String()
	}
	return ""
}
