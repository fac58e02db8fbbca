package check

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"sort"
	"strings"

	"github.com/harness-edge/harness-edge/internal/nemesis/history"
)

// usageOf is an execution's usage as the final reads show it (the largest
// over nodes), else as a terminal snapshot read before showed it, else none
// for a mock execution started without config.usage, else the last usage seen before (a deleted conversation's executions leave the
// views but keep their usage); exact is false then.
func usageOf(x *execution) (u *usageFigures, exact bool) {
	for _, s := range x.finalSnaps {
		if s.Usage != nil && (u == nil || s.Usage.TotalTokens > u.TotalTokens) {
			u = s.Usage
		}
	}
	if u != nil || len(x.finalSnaps) > 0 {
		return u, true
	}
	if x.endSeen {
		return x.endUsage, true
	}
	if x.noUsage && x.lastUsage == nil {
		return nil, true // a mock execution without config.usage reports none
	}
	return x.lastUsage, false
}

// micros reads a cost amount (a decimal string or a number) in micro-units.
func micros(raw json.RawMessage) (*big.Int, bool) {
	s := strings.Trim(strings.TrimSpace(string(raw)), `"`)
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, false
	}
	r.Mul(r, big.NewRat(1_000_000, 1))
	return new(big.Int).Quo(r.Num(), r.Denom()), true
}

// checkUsage: each tenant's spent tokens stay within its budget's bound
// (docs/usage.md "The bound": the limit plus the slack the run states), and
// every final GET /v1/usage equals the sum of its tenant's executions' own
// usage, tokens, executions and cost per currency.
func checkUsage(ix *index, rep *Report) {
	if len(ix.finals) == 0 {
		return
	}
	type sum struct {
		tokens, executions int64
		costs              map[string]*big.Int
		exact              bool
		lines              []int
		// deletedPartly counts the deleted executions whose usage no view showed whole.
		deletedPartly int
	}
	sums := map[string]*sum{}
	for _, id := range ix.order {
		x := ix.execs[id]
		u, exact := usageOf(x)
		s := sums[x.tenant]
		if s == nil {
			s = &sum{costs: map[string]*big.Int{}, exact: true}
			sums[x.tenant] = s
		}
		if !exact && ix.deletedOnPurpose(x) {
			s.deletedPartly++
		}
		if u == nil {
			// Its usage is unknown: acknowledged, or deleted with its conversation (the
			// total keeps what no view showed).
			if !exact && (len(x.acks) > 0 || ix.deletedOnPurpose(x)) {
				s.exact = false
			}
			continue
		}
		s.exact = s.exact && exact
		s.tokens += u.TotalTokens
		s.executions++
		if u.Cost != nil {
			if m, ok := micros(u.Cost.Amount); ok {
				if s.costs[u.Cost.Currency] == nil {
					s.costs[u.Cost.Currency] = new(big.Int)
				}
				s.costs[u.Cost.Currency].Add(s.costs[u.Cost.Currency], m)
			}
		}
		if len(x.finals) > 0 {
			s.lines = append(s.lines, finalLine(ix, x.finals[0]))
		}
	}
	for _, tenant := range slices.Sorted(maps.Keys(sums)) { // notes in a stable order
		if s := sums[tenant]; s.deletedPartly > 0 {
			rep.note("tenant %q: the usage of %d execution(s) of deleted conversations was not seen whole (no terminal snapshot read before the delete); its usage total is checked as a lower bound", tenant, s.deletedPartly)
		}
	}
	unseen := unseenStarts(ix)
	tenants := make([]string, 0, len(unseen))
	for tenant := range unseen {
		tenants = append(tenants, tenant)
	}
	sort.Strings(tenants) // notes in a stable order
	for _, tenant := range tenants {
		if s, n := sums[tenant], unseen[tenant]; s != nil && n > 0 && s.exact {
			s.exact = false
			rep.note("tenant %q: %d start(s) got no clear answer and may have made an execution no view showed; its usage total is checked as a lower bound", tenant, n)
		}
	}
	if ix.run != nil {
		for _, b := range ix.run.Settings.Budgets {
			for tenant, s := range sums {
				if (b.Tenant == tenant || b.Tenant == "*") && s.tokens > b.Tokens+b.Slack {
					rep.add(BudgetExceeded, "", firstLines(s.lines, 20), "tenant %q spent %d tokens, beyond its budget of %d plus the documented slack %d", tenant, s.tokens, b.Tokens, b.Slack)
				}
			}
		}
	}
	for _, r := range ix.requests {
		if r.Op != "usage" || !r.Final || !r.OK() {
			continue
		}
		var report struct {
			Total *usageFigures `json:"total"`
		}
		if json.Unmarshal(r.Answer, &report) != nil || report.Total == nil {
			rep.add(MalformedHistory, "", []int{ix.lineOf[r]}, "a final usage answer without a total")
			continue
		}
		s := sums[r.Tenant]
		if s == nil {
			s = &sum{costs: map[string]*big.Int{}, exact: true}
		}
		got := report.Total
		line := ix.lineOf[r]
		if s.exact && (got.TotalTokens != s.tokens || got.Executions != s.executions) {
			rep.add(UsageSumMismatch, "", []int{line}, "GET /v1/usage for tenant %q says %d tokens over %d executions; its executions' own usage sums to %d over %d", r.Tenant, got.TotalTokens, got.Executions, s.tokens, s.executions)
			continue
		}
		if !s.exact && (got.TotalTokens < s.tokens || got.Executions < s.executions) {
			rep.add(UsageSumMismatch, "", []int{line}, "GET /v1/usage for tenant %q says %d tokens over %d executions, less than the %d over %d its executions were seen to use", r.Tenant, got.TotalTokens, got.Executions, s.tokens, s.executions)
			continue
		}
		if s.exact {
			checkCosts(r.Tenant, got.Costs, s.costs, line, rep)
		}
	}
}

func checkCosts(tenant string, got []money, want map[string]*big.Int, line int, rep *Report) {
	have := map[string]*big.Int{}
	for _, m := range got {
		if v, ok := micros(m.Amount); ok {
			have[m.Currency] = v
		}
	}
	currencies := map[string]bool{}
	for c := range have {
		currencies[c] = true
	}
	for c := range want {
		currencies[c] = true
	}
	var names []string
	for c := range currencies {
		names = append(names, c)
	}
	sort.Strings(names)
	for _, c := range names {
		h, w := have[c], want[c]
		if h == nil {
			h = new(big.Int)
		}
		if w == nil {
			w = new(big.Int)
		}
		if h.Cmp(w) != 0 {
			rep.add(UsageSumMismatch, "", []int{line}, "GET /v1/usage for tenant %q says %s micro-%s; its executions' own cost sums to %s", tenant, h, c, w)
		}
	}
}

func firstLines(ls []int, n int) []int {
	if len(ls) > n {
		return ls[:n]
	}
	return ls
}

// unseenStarts counts, per tenant, the starts without a clear answer (no
// answer, or a 5xx other than 503) whose key no start acknowledged, beyond
// the executions seen that no start acknowledged: each such start may have
// made an execution nobody saw, whose usage the server's total holds. Retries
// of one key count once.
func unseenStarts(ix *index) map[string]int {
	covered := map[*history.Request]bool{}
	unacked := map[string]int{}
	for _, id := range ix.order {
		x := ix.execs[id]
		for _, r := range x.createdBy {
			covered[r] = true
		}
		if !x.acked {
			unacked[x.tenant]++
		}
	}
	type key struct{ tenant, conv, key string }
	open := map[key]bool{}
	for _, r := range ix.requests {
		if r.Op != "start" || r.OK() || refused(r) || covered[r] {
			continue
		}
		var b startBody
		_ = json.Unmarshal(r.Body, &b)
		k := key{r.Tenant, b.ConversationID, b.IdempotencyKey}
		if b.IdempotencyKey == "" {
			k.key = fmt.Sprint("#", ix.lineOf[r]) // without a key every attempt is its own
		}
		open[k] = true
	}
	out := map[string]int{}
	for k := range open {
		out[k.tenant]++
	}
	for t, n := range out {
		out[t] = max(0, n-unacked[t])
	}
	return out
}
