package budget

import (
	"fmt"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/usage"
)

// Admission (docs/usage.md "Budgets"): a start is decided by the store, in the commit that
// creates its execution (store.Admission), so that concurrent starts on any number of nodes
// cannot all pass on the same picture of what was spent. This file turns the limits into the
// store's checks, and a refusal back into what the caller is told.

// ReservedRetryAfter is the Retry-After of a start refused because the budget is reserved by
// running executions, not spent: one of them settling may make room at any moment.
const ReservedRetryAfter = 2

// bound is one check of one limit in force for a start.
type bound struct {
	limit Limit
	check check
	store store.BudgetCheck
	end   time.Time // the window's end
}

func (b *Budgets) bounds(tenant, provider string, at time.Time) []bound {
	var out []bound
	for _, l := range b.limits {
		if !l.applies(tenant, provider) {
			continue
		}
		for _, c := range l.checks() {
			start, end := c.window.bounds(at)
			// The estimate's executions: this window's and the day before it (a new window
			// starts from yesterday's estimate, and a month's start reads one day more).
			recent := start.Add(-24 * time.Hour)
			reserve := l.ReserveTokens
			if c.currency != "" {
				reserve = l.ReserveCost.Micros
			}
			out = append(out, bound{limit: l, check: c, end: end, store: store.BudgetCheck{
				Provider: l.Provider, Currency: c.currency, Limit: c.limit, Reserve: reserve,
				FromMs: start.UnixMilli(), ToMs: end.UnixMilli(), RecentFromMs: recent.UnixMilli(),
			}})
		}
	}
	return out
}

// Admission is what a start of provider for tenant at `at` (its creation time) must fit in:
// one store check per bound of every budget that applies (nil when none does).
func (b *Budgets) Admission(tenant, provider string, at time.Time) []store.BudgetCheck {
	var out []store.BudgetCheck
	for _, bd := range b.bounds(tenant, provider, at) {
		out = append(out, bd.store)
		// The running check's picture of the window (spend.go) is read now, in the background,
		// so that the execution's first report can already be found to cross the limit.
		b.window(tenant, bd.check.window, at)
	}
	return out
}

// Refusal describes the store's refusal e of a start asked with Admission(tenant, provider,
// at): the message naming the budget, the seconds to wait, and whether the budget is spent
// (BUDGET_EXCEEDED until its window ends) rather than only reserved by running executions.
func (b *Budgets) Refusal(tenant, provider string, at time.Time, e *store.AdmissionError) (message string, retryAfter int64, spent bool) {
	bounds := b.bounds(tenant, provider, at)
	if e.Check < 0 || e.Check >= len(bounds) {
		// The limits changed since the start asked (a reload): say what the store found.
		return "Budget exceeded: " + e.Error(), ReservedRetryAfter, false
	}
	bd := bounds[e.Check]
	c := bd.check
	if e.Reason == store.RefusedSpent {
		wait := int64(bd.end.Sub(b.opts.Now()).Seconds() + 0.999)
		return fmt.Sprintf("Budget exceeded: %s spent %s of %s this %s; retry after %s",
			bd.limit.Name(), c.format(e.Spent), c.format(c.limit), c.window, bd.end.Format(time.RFC3339)), max(wait, 1), true
	}
	return fmt.Sprintf("Budget reserved: %s spent %s of %s this %s and its %d running execution(s) hold %s more; "+
		"a start reserves %s. Retry when one has finished",
		bd.limit.Name(), c.format(e.Spent), c.format(c.limit), c.window, e.Outstanding, c.format(e.Reserved),
		c.format(e.Reservation)), ReservedRetryAfter, false
}

// checkReserve refuses a reservation that is not positive or larger than its limit.
func checkReserve(l Limit) error {
	switch {
	case l.ReserveTokens < 0 || (l.ReserveTokens > 0 && l.Tokens == 0):
		return fmt.Errorf("budget of %s: reserve in tokens needs a tokens limit", l.Name())
	case l.ReserveTokens > l.Tokens:
		return fmt.Errorf("budget of %s: reserve %d tokens is more than the limit, %d", l.Name(), l.ReserveTokens, l.Tokens)
	}
	if l.ReserveCost.Micros == 0 && l.ReserveCost.Currency == "" {
		return nil
	}
	switch {
	case !l.Cost.Known() || l.ReserveCost.Currency != l.Cost.Currency:
		return fmt.Errorf("budget of %s: a reserved cost is in the currency of the cost limit", l.Name())
	case l.ReserveCost.Micros <= 0 || l.ReserveCost.Micros > l.Cost.Micros:
		return fmt.Errorf("budget of %s: reserve %s %s must be positive and at most the limit", l.Name(),
			usage.FormatMicros(l.ReserveCost.Micros), l.ReserveCost.Currency)
	}
	return nil
}
