package backend

import (
	"encoding/json"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/usage"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Usage (docs/usage.md). A provider reports what its execution consumed so far
// (Run.ReportUsage, cumulative); the runtime checks it, stores it with the execution record
// (the snapshot's usage) in the commit of a provider.event announcing it, and puts the row sums
// are read from (store.ExecutionUsage) in the same commit. Usage is cumulative per execution
// and committed with the execution, so whoever continues the execution (a resume after a
// restart, a takeover) continues from the stored value and nothing is ever counted twice.
// The tenant's budgets learn of a report as it is queued (checkBudgets), metrics and the span
// once it is durable (usageCommitted).

// ReportUsage reports the execution's usage so far: cumulative since the execution started, so
// a later report replaces an earlier one (counts that go down are refused). A report that is
// negative, beyond 2^53, in an unknown currency or going back on an earlier one is ignored and
// logged once per execution; the execution goes on (the error is always nil then, so a
// provider never fails its work over bookkeeping). Ignored once the execution is terminal.
func (r *Run) ReportUsage(u usage.Usage) error { return r.x.reportUsage(u) }

func (x *execution) reportUsage(u usage.Usage) error {
	u = u.Normalize()
	if err := usage.Check(u); err != nil {
		x.warnUsage(err)
		return nil
	}
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	if isTerminalState(x.state()) {
		return nil
	}
	prev, err := storedUsage(x.wrec)
	if err != nil {
		x.warnUsage(err)
		return nil
	}
	if err := usage.CheckGrowth(prev, u); err != nil {
		x.warnUsage(err)
		return nil
	}
	if u == prev {
		return nil
	}
	wire := usage.ToAPI(u)
	data, err := json.Marshal(struct {
		Provider string    `json:"provider"`
		Type     string    `json:"type"`
		Usage    api.Usage `json:"usage"`
	}{UsageNamespace, "usage", wire})
	if err != nil {
		return internalError("encode usage", err)
	}
	at := now()
	rec := x.wrec
	rec.Execution.Usage = &wire
	rec.Execution.UpdatedAt = at
	row := store.ExecutionUsage{
		ExecutionID: x.id, Tenant: rec.Tenant, ConversationID: x.conversationID, ProviderID: x.providerID,
		CreatedMs: int64(store.PositionOf(rec.Execution).CreatedMs), Usage: u,
	}
	// Not byProvider: the usage event is the runtime's, and what was spent is recorded even when
	// the provider has used up its event limits (an execution can always be billed, as it can
	// always end).
	err = x.enqueue(change{
		at: at, rec: &rec, usage: &usageChange{row: row, delta: usage.Sub(u, prev)},
		events: []newEvent{{typ: api.StandardEventTypeProviderEvent, data: data}},
	})
	if err != nil {
		return err
	}
	x.checkBudgets(row)
	return nil
}

// checkBudgets tells the budgets of a report as soon as it is queued (writeMu held): a report
// that takes a budget to its limit is acted on before the provider can report again, so an
// execution is stopped within one report of the limit. (Were the commit to fail, the execution
// is stranded and fails: it runs no further either way.)
func (x *execution) checkBudgets(row store.ExecutionUsage) {
	b := x.rt.opts.Budgets
	if b == nil || x.usage.crossed.Load() {
		return
	}
	crossed, cancel := b.Spent(row.Tenant, x.providerID, x.id, row.CreatedMs, row.Usage)
	if crossed == "" || !x.usage.crossed.CompareAndSwap(false, true) {
		return
	}
	action := "finish"
	if cancel {
		action = "cancel"
	}
	data, _ := json.Marshal(struct {
		Provider string `json:"provider"`
		Type     string `json:"type"`
		Budget   string `json:"budget"`
		Action   string `json:"action"`
	}{UsageNamespace, "budget.exceeded", crossed, action})
	// budget.exceeded (webhooks notify it) in the commit after the usage that crossed.
	_ = x.enqueue(change{at: now(), events: []newEvent{{typ: api.StandardEventTypeProviderEvent, data: data}}})
	x.rt.log.Info("harness: execution took its tenant to a budget's limit", "execution", x.id, "budget", crossed, "action", action)
	if cancel {
		reason := "Budget exceeded: " + crossed
		if _, err := x.beginCancelLocked(x.rt.baseCtx, &reason); err != nil {
			x.rt.log.Error("harness: cancel an execution over budget", "execution", x.id, "err", err)
		}
	}
}

func (x *execution) warnUsage(err error) {
	if x.usage.warned.CompareAndSwap(false, true) {
		x.rt.log.Warn("harness: provider reported usage that cannot be right; ignored (logged once per execution)",
			"execution", x.id, "provider", x.providerID, "err", err)
	}
}

// UsageNamespace is the provider field of the provider.event data the runtime itself emits:
// {"provider": "harness", "type": "usage", "usage": {…}} and {"provider": "harness", "type":
// "budget.exceeded", …}. A reference client reads them as any provider.event.
const UsageNamespace = "harness"

// UsageObserver is the optional part of an Observer that counts usage (Prometheus): the
// growth of one execution's usage, once durable.
type UsageObserver interface {
	UsageAdded(tenant, providerID string, delta usage.Usage)
}

// usageState is what an execution knows of its usage reports (writeMu held, except warned).
type usageState struct {
	warned atomic.Bool // a bad report was logged: later ones of the execution are not
	// crossed: this execution took a budget to its limit (its budget.exceeded event emitted).
	crossed atomic.Bool
}

// usageChange is what a change adds to an execution's usage: the row it puts and its growth.
type usageChange struct {
	row   store.ExecutionUsage
	delta usage.Usage
}

// storedUsage is the usage a record carries (zero when none).
func storedUsage(rec store.Execution) (usage.Usage, error) {
	if rec.Execution.Usage == nil {
		return usage.Usage{}, nil
	}
	return usage.FromAPI(*rec.Execution.Usage)
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
func (x *execution) traceUsage(u usage.Usage) {
	span := x.span
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
