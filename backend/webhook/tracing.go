package webhook

import (
	"context"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/harness-edge/harness-edge/backend/store"
)

// Tracing. Each delivery attempt is a span of its own trace ("harness.webhook.deliver", kind
// client), linked to the execution's span (the record's traceParent), not a child of it: a
// delivery happens after the execution's commit, maybe after a restart or hours of retries.
// The attempt's traceparent goes to the receiver with the request, so a receiver that traces
// continues the delivery's trace.

const tracerName = "github.com/harness-edge/harness-edge/backend/webhook"

var traceContext propagation.TraceContext

// startDeliverySpan opens the span of one attempt at n. The execution's record is read only
// when the span records (tracing on and sampled).
func (s *sender) startDeliverySpan(ctx context.Context, n *store.Notification, host string) (context.Context, trace.Span) {
	ctx, span := s.tracer.Start(ctx, "harness.webhook.deliver", trace.WithSpanKind(trace.SpanKindClient))
	if !span.IsRecording() {
		return ctx, span
	}
	span.SetAttributes(
		attribute.String("harness.execution.id", n.ExecutionID),
		attribute.Int64("harness.event.sequence", n.Sequence),
		attribute.Int("harness.webhook.attempt", n.Attempts+1),
		attribute.String("server.address", host))
	if rec, found, err := s.store.Execution(n.ExecutionID); err == nil && found && rec.TraceParent != "" {
		linked := trace.SpanContextFromContext(traceContext.Extract(context.Background(),
			propagation.MapCarrier{"traceparent": rec.TraceParent}))
		if linked.IsValid() {
			span.AddLink(trace.Link{SpanContext: linked})
		}
	}
	return ctx, span
}

// injectDeliveryTrace gives the receiver the attempt's trace context.
func injectDeliveryTrace(ctx context.Context, req *http.Request) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		traceContext.Inject(ctx, propagation.HeaderCarrier(req.Header))
	}
}

// endDeliverySpan records the attempt's answer.
func endDeliverySpan(span trace.Span, status int, err error) {
	if span.IsRecording() {
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		} else {
			span.SetAttributes(attribute.Int("http.response.status_code", status))
			if status < 200 || status > 299 {
				span.SetStatus(codes.Error, "HTTP "+strconv.Itoa(status))
			}
		}
	}
	span.End()
}
