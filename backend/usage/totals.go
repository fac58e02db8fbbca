package usage

import (
	"maps"
	"slices"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Totals is a sum of executions' usage: token counts, and costs per currency (never converted:
// there is no exchange rate in a ledger).
type Totals struct {
	Executions        int64
	InputTokens       int64
	OutputTokens      int64
	CachedReadTokens  int64
	CachedWriteTokens int64
	ThoughtTokens     int64
	TotalTokens       int64
	Costs             map[string]int64 // currency → micro-units
}

// Add counts one execution's usage (or, with executions 0, a change to one already counted).
func (t *Totals) Add(u Usage, executions int64) {
	t.Executions += executions
	t.InputTokens = satAdd(t.InputTokens, u.InputTokens)
	t.OutputTokens = satAdd(t.OutputTokens, u.OutputTokens)
	t.CachedReadTokens = satAdd(t.CachedReadTokens, u.CachedReadTokens)
	t.CachedWriteTokens = satAdd(t.CachedWriteTokens, u.CachedWriteTokens)
	t.ThoughtTokens = satAdd(t.ThoughtTokens, u.ThoughtTokens)
	t.TotalTokens = satAdd(t.TotalTokens, u.TotalTokens)
	if u.Cost.Known() {
		if t.Costs == nil {
			t.Costs = map[string]int64{}
		}
		t.Costs[u.Cost.Currency] = satAdd(t.Costs[u.Cost.Currency], u.Cost.Micros)
	}
}

// CostMicros is the sum of every currency's micro-units: only an ordering key (the most
// expensive first), never shown as money.
func (t Totals) CostMicros() int64 {
	var sum int64
	for _, m := range t.Costs {
		sum = satAdd(sum, m)
	}
	return sum
}

// ToAPI is t as GET /v1/usage answers it: costs by currency code.
func (t Totals) ToAPI() api.UsageTotals {
	out := api.UsageTotals{
		Executions: t.Executions, InputTokens: t.InputTokens, OutputTokens: t.OutputTokens,
		CachedReadTokens: t.CachedReadTokens, CachedWriteTokens: t.CachedWriteTokens,
		ThoughtTokens: t.ThoughtTokens, TotalTokens: t.TotalTokens, Costs: []api.Cost{},
	}
	for _, c := range slices.Sorted(maps.Keys(t.Costs)) {
		out.Costs = append(out.Costs, api.Cost{Amount: FormatMicros(t.Costs[c]), Currency: c})
	}
	return out
}
