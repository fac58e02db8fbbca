package backend

import (
	"go.opentelemetry.io/otel/attribute"

	"github.com/harness-edge/harness-edge/backend/usage"
)

// UsageObserver is the optional part of an Observer that counts usage (Prometheus): the
// growth of one execution's usage, once durable.
type UsageObserver interface {
	UsageAdded(tenant, providerID string, delta usage.Usage)
}

// usageCommitted runs on the store's commit goroutine once a usage change is durable: metrics
// and the span's GenAI attributes.
func (x *execution) usageCommitted(uc *usageChange) {
	if o, ok := x.rt.observer.(UsageObserver); ok {
		o.UsageAdded(uc.row.Tenant, x.providerID, uc.delta)
	}
	x.traceUsage(uc.row.Usage)
}

// GenAI semantic conventions' usage attributes (OpenTelemetry), and ours for what they lack.
var (
	attrUsageInput      = attribute.Key("gen_ai.usage.input_tokens")
	attrUsageOutput     = attribute.Key("gen_ai.usage.output_tokens")
	attrUsageCacheRead  = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	attrUsageCacheWrite = attribute.Key("gen_ai.usage.cache_creation.input_tokens")
	// AttrUsageCost and AttrUsageCurrency are harness-edge's: the conventions have no cost.
	AttrUsageCost     = attribute.Key("harness.usage.cost")
	AttrUsageCurrency = attribute.Key("harness.usage.currency")
	AttrUsageThought  = attribute.Key("harness.usage.thought_tokens")
	AttrUsageTotal    = attribute.Key("harness.usage.total_tokens")
)

// traceUsage sets the execution span's usage attributes to the latest cumulative values.
func (t *executionSpan) traceUsage(u usage.Usage) {
	span := t.span
	if span == nil || !span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{
		attrUsageInput.Int64(u.InputTokens), attrUsageOutput.Int64(u.OutputTokens),
		AttrUsageTotal.Int64(u.TotalTokens),
	}
	if u.CachedReadTokens > 0 {
		attrs = append(attrs, attrUsageCacheRead.Int64(u.CachedReadTokens))
	}
	if u.CachedWriteTokens > 0 {
		attrs = append(attrs, attrUsageCacheWrite.Int64(u.CachedWriteTokens))
	}
	if u.ThoughtTokens > 0 {
		attrs = append(attrs, AttrUsageThought.Int64(u.ThoughtTokens))
	}
	if u.Cost.Known() {
		attrs = append(attrs, AttrUsageCost.String(usage.FormatMicros(u.Cost.Micros)), AttrUsageCurrency.String(u.Cost.Currency))
	}
	span.SetAttributes(attrs...)
}
