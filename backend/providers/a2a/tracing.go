package a2a

import (
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Tracing. The execution's span is in the context of every call the A2A client makes for it
// (backend/tracing.go): its W3C traceparent goes to the agent with the request, so an agent
// that traces continues the execution's trace. Without a span context nothing is added.

var traceContext propagation.TraceContext

// withTraceContext returns req with its context's trace context in the header (a copy: a
// RoundTripper must not change the caller's request), or req itself when there is none.
func withTraceContext(req *http.Request) *http.Request {
	if !trace.SpanContextFromContext(req.Context()).IsValid() {
		return req
	}
	req = req.Clone(req.Context())
	traceContext.Inject(req.Context(), propagation.HeaderCarrier(req.Header))
	return req
}
