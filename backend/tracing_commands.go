package backend

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Commands across nodes (cluster_commands.go) carry the poster's trace context in their body,
// a traceParent member that nodes without tracing ignore (no store schema change): the poster's
// span ("harness.command cancel", kind producer, in the caller's request) is the parent of the
// owner's ("harness.command cancel", kind consumer), inside which the owner runs the command.

// respondBody is the body of a respond command: the response, and the poster's traceparent
// beside its members (an owner that predates it decodes the response and ignores the rest).
type respondBody struct {
	api.ActionResponse
	TraceParent string `json:"traceParent,omitempty"`
}

// startCommandSpan opens the poster's span of a command about rec.
func (r *Runtime) startCommandSpan(ctx context.Context, kind string, rec store.Execution) (context.Context, trace.Span) {
	ctx, span := r.tracer().Start(ctx, "harness.command "+kind, trace.WithSpanKind(trace.SpanKindProducer))
	if span.IsRecording() {
		span.SetAttributes(AttrExecutionID.String(rec.Execution.ID), AttrTenant.String(rec.Tenant),
			AttrCommandOwner.String(rec.Owner))
	}
	return ctx, span
}

// runCommandSpan opens the owner's span of a command whose poster sent traceParent.
func (r *Runtime) runCommandSpan(ctx context.Context, cmd store.Command, traceParent string) (context.Context, trace.Span) {
	ctx = contextWithTraceParent(ctx, traceParent)
	ctx, span := r.tracer().Start(ctx, "harness.command "+cmd.Kind, trace.WithSpanKind(trace.SpanKindConsumer))
	if span.IsRecording() {
		span.SetAttributes(AttrExecutionID.String(cmd.ExecutionID))
	}
	return ctx, span
}

// AttrCommandOwner names the node a command was posted to.
const AttrCommandOwner = attribute.Key("harness.command.owner")

// spanContext is a context that carries the execution's span (and nothing else): the parent
// of what the runtime does for the execution outside its run, such as the provider's cleanup.
func (x *execution) spanContext() context.Context {
	if x.span == nil {
		return context.Background()
	}
	return trace.ContextWithSpan(context.Background(), x.span)
}
