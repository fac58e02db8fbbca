package backend

import (
	"encoding/json"

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
