package backend

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// spanContext is a context that carries the execution's span (and nothing else): the parent
// of what the runtime does for the execution outside its run, such as the provider's cleanup.
func (t *executionSpan) spanContext() context.Context {
	if t.span == nil {
		return context.Background()
	}
	return trace.ContextWithSpan(context.Background(), t.span)
}
