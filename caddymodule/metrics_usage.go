package caddymodule

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/harness-edge/harness-edge/backend/usage"
)

// Usage metrics (docs/usage.md): tokens by tenant, provider and kind; cost by tenant, provider
// and currency. Counters grow by each execution's durable usage growth (backend.UsageObserver),
// on the node that runs the execution, so summing every node's counters counts each token once.
//
// Tenant names come from the authentication layer and are unbounded (README, "Tenancy"): each
// would be a series kept for the process's life. So the tenant label is the tenant's name only
// for tenants a budget names (a bounded, configured set: the ones an operator watches), and
// "other" for everyone else; GET /v1/usage has every tenant's exact figures.
var usageMetrics = sync.OnceValue(func() *usageCollectors {
	const namespace = "harness"
	return &usageCollectors{
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "usage_tokens_total",
			Help:      "Tokens executions consumed, as their providers reported, by tenant (named in a budget, else other), provider and kind (input, output, cached_read, cached_write, thought, total).",
		}, []string{"tenant", "provider", "kind"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "usage_cost_total",
			Help:      "Cost executions incurred, as their providers reported, in units of the currency, by tenant (named in a budget, else other), provider and currency.",
		}, []string{"tenant", "provider", "currency"}),
	}
})

type usageCollectors struct {
	tokens *prometheus.CounterVec
	cost   *prometheus.CounterVec
	named  atomic.Pointer[map[string]bool] // the tenants budgets name
}

// otherTenants is the tenant label of a tenant no budget names.
const otherTenants = "other"

// nameTenants makes the tenants of budgets the ones labelled by name.
func (u *usageCollectors) nameTenants(budgets []Budget) {
	named := map[string]bool{}
	for _, b := range budgets {
		named[b.Tenant] = true
	}
	u.named.Store(&named)
}

func (u *usageCollectors) tenantLabel(tenant string) string {
	if named := u.named.Load(); named != nil && (*named)[tenant] {
		return tenant
	}
	return otherTenants
}

// UsageAdded counts one execution's usage growth (backend.UsageObserver).
func (m *metrics) UsageAdded(tenant, providerID string, d usage.Usage) {
	u := usageMetrics()
	label := u.tenantLabel(tenant)
	for _, k := range []struct {
		kind string
		n    int64
	}{
		{"input", d.InputTokens}, {"output", d.OutputTokens}, {"cached_read", d.CachedReadTokens},
		{"cached_write", d.CachedWriteTokens}, {"thought", d.ThoughtTokens}, {"total", d.TotalTokens},
	} {
		if k.n > 0 {
			u.tokens.WithLabelValues(label, providerID, k.kind).Add(float64(k.n))
		}
	}
	if d.Cost.Known() && d.Cost.Micros > 0 {
		// A float only for Prometheus, which has no other number; sums stay exact in the store.
		u.cost.WithLabelValues(label, providerID, d.Cost.Currency).Add(float64(d.Cost.Micros) / usage.MicrosPerUnit)
	}
}
