package sdk

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Tracing. The SDK uses OpenTelemetry's API only (go.opentelemetry.io/otel), never its SDK:
// whether and where spans are recorded is the calling program's choice. What the SDK adds:
//
//   - every request carries the trace context of the ctx it was made with (W3C traceparent
//     and tracestate, and baggage), including each reconnect of an event stream and each
//     replay read, so the server's spans join the caller's trace;
//   - a reconnect or a gap filled from the replay is an event on the caller's span
//     (harness.stream.reconnect, harness.stream.gap_filled), not a trace of its own.

// w3cPropagator is used when the program set no propagator of its own: a trace that is not
// passed on would end at the SDK, and W3C Trace Context is what the server reads.
var w3cPropagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// propagator is the program's global propagator (otel.SetTextMapPropagator) if it set one,
// else W3C Trace Context and baggage.
func propagator() propagation.TextMapPropagator {
	if p := otel.GetTextMapPropagator(); len(p.Fields()) > 0 {
		return p
	}
	return w3cPropagator
}

// injectTraceContext writes ctx's trace context into the request's header. Without a span
// context in ctx it writes nothing (and costs a map lookup).
func injectTraceContext(ctx context.Context, header http.Header) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	propagator().Inject(ctx, propagation.HeaderCarrier(header))
}

// The span events of an event stream, on the caller's span (a no-op when it records nothing).
const (
	spanEventReconnect = "harness.stream.reconnect"
	spanEventGapFilled = "harness.stream.gap_filled"
)

func (s *eventStream) spanEvent(name string, attrs ...attribute.KeyValue) {
	span := trace.SpanFromContext(s.ctx)
	if !span.IsRecording() {
		return
	}
	attrs = append(attrs,
		attribute.String("harness.execution.id", s.executionID),
		attribute.Int64("harness.stream.after", s.cursor))
	span.AddEvent(name, trace.WithAttributes(attrs...))
}

// gapFilled records that a replay read delivered n events the stream had not brought.
func (s *eventStream) gapFilled(n int) {
	if n > 0 {
		s.spanEvent(spanEventGapFilled, attribute.Int("harness.stream.events", n))
	}
}

// errorText is err's message, "" for nil.
func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
