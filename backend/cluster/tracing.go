package cluster

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/store"
)

// Commands carry the poster's trace context in their body (commands.go): the poster's span
// ("harness.command cancel", kind producer, in the caller's request) is the parent of the
// owner's ("harness.command cancel", kind consumer), inside which the owner runs the command.

// AttrCommandOwner names the node a command was posted to.
const AttrCommandOwner = attribute.Key("harness.command.owner")

// startCommandSpan opens the poster's span of a command about rec.
func (c *Cluster) startCommandSpan(ctx context.Context, kind string, rec store.Execution) (context.Context, trace.Span) {
	ctx, span := c.host.Tracer().Start(ctx, "harness.command "+kind, trace.WithSpanKind(trace.SpanKindProducer))
	if span.IsRecording() {
		span.SetAttributes(backend.AttrExecutionID.String(rec.Execution.ID), backend.AttrTenant.String(rec.Tenant),
			AttrCommandOwner.String(rec.Owner))
	}
	return ctx, span
}

// runCommandSpan opens the owner's span of a command whose poster sent traceParent.
func (c *Cluster) runCommandSpan(ctx context.Context, cmd store.Command, traceParent string) (context.Context, trace.Span) {
	ctx = backend.ContextWithTraceParent(ctx, traceParent)
	ctx, span := c.host.Tracer().Start(ctx, "harness.command "+cmd.Kind, trace.WithSpanKind(trace.SpanKindConsumer))
	if span.IsRecording() {
		span.SetAttributes(backend.AttrExecutionID.String(cmd.ExecutionID))
	}
	return ctx, span
}
