// Package budget keeps tenants within their usage budgets (docs/usage.md): tokens and/or cost
// per UTC day or calendar month, per tenant and optionally per provider. The runtime calls it
// through backend.Budgets: Admission for every start, whose checks the store decides in the
// commit that creates the execution, each running execution reserving what it may still spend
// (admission.go; refused: 429 BUDGET_EXCEEDED with Retry-After at the end of the budget's
// window, or 429 RATE_LIMITED with a short one when the budget is only reserved); and Spent
// after every usage report (a report that takes a budget to its limit cancels the execution,
// or lets its turn finish, per the budget).
//
// What a tenant spent in a window is the sum of the cumulative usage of its executions created
// in that window (the time bucket is the execution's creation, as GET /v1/usage sums it). It is
// read from the store (store.UsageReader), so every node sees every node's spending, and kept
// in memory per window as each execution's latest cumulative value: a scan of the store and the
// reports of this node merge by taking the larger value per execution, never by adding, so
// nothing is counted twice however the two overlap. On a store only this process writes
// (bbolt) that is exact; on a shared store (PostgreSQL) a window is scanned again when its scan
// is older than Options.Refresh, so another node's spending shows within that bound.
package budget

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/usage"
)

// Window is the period a limit counts over, in UTC.
type Window int

const (
	Day   Window = iota + 1 // a UTC calendar day
	Month                   // a UTC calendar month
)

func (w Window) String() string {
	switch w {
	case Day:
		return "day"
	case Month:
		return "month"
	}
	return "?"
}

// bounds is the window containing t: [start, end).
func (w Window) bounds(t time.Time) (start, end time.Time) {
	t = t.UTC()
	switch w {
	case Month:
		start = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 1, 0)
	default:
		start = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 0, 1)
	}
}

// AnyTenant as a Limit's Tenant applies the limit to each tenant on its own (not to all of
// them together).
const AnyTenant = "*"

// Limit is one budget: at least one of Tokens and Cost.
type Limit struct {
	Tenant   string // the tenant's name, or AnyTenant
	Provider string // "" for every provider together
	// Tokens, when positive, bounds the total tokens spent per TokensWindow.
	Tokens       int64
	TokensWindow Window
	// Cost, when Known, bounds the cost spent per CostWindow, in its currency (costs reported in
	// other currencies do not count against it: there is no exchange rate here).
	Cost       usage.Money
	CostWindow Window
	// Finish, when true, lets an execution that crosses the budget finish its turn (later
	// starts are refused); by default it is cancelled.
	Finish bool
	// ReserveTokens and ReserveCost, when set, are what each start reserves of the tokens and
	// of the cost limit until it settles (admission.go); unset, the largest usage among the
	// tenant's recently settled executions on the budget, or with none all that is left.
	ReserveTokens int64
	ReserveCost   usage.Money
}

// Name says which budget it is, for messages and logs: `tenant "alice" (provider "acp")`.
func (l Limit) Name() string {
	name := fmt.Sprintf("tenant %q", l.Tenant)
	if l.Tenant == AnyTenant {
		name = "every tenant"
	}
	if l.Provider != "" {
		name += fmt.Sprintf(" with provider %q", l.Provider)
	}
	return name
}

func (l Limit) applies(tenant, provider string) bool {
	return (l.Tenant == AnyTenant || l.Tenant == tenant) && (l.Provider == "" || l.Provider == provider)
}

// RefreshNearLimit bounds the age of a window's scan on a shared store once this node sees
// half of a limit spent: near the limit another node's spending must show within about one
// usage report, not within Options.Refresh. The randomized nemesis found why (docs/nemesis.md):
// a burst over three PostgreSQL nodes, no fault injected, spent 2,360 tokens of a 2,000-token
// budget while each node's view of the others was up to 2 s old.
const RefreshNearLimit = 50 * time.Millisecond

// Options configure New.
type Options struct {
	// Refresh bounds how old the scan of a window may be before it is read again from the store:
	// the staleness of other nodes' spending. 0: never again (a store only this process writes).
	Refresh time.Duration
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

// Budgets is the room: the limits and what each tenant spent in their windows.
type Budgets struct {
	limits []Limit
	src    store.UsageReader
	opts   Options

	mu      sync.Mutex
	windows map[windowKey]*spend
}

// New checks limits and returns the budgets that read spending from src.
func New(limits []Limit, src store.UsageReader, opts Options) (*Budgets, error) {
	for _, l := range limits {
		if err := Check(l); err != nil {
			return nil, err
		}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Budgets{limits: limits, src: src, opts: opts, windows: map[windowKey]*spend{}}, nil
}

// ErrNoLimit is Check's refusal of a limit that sets neither tokens nor cost.
var ErrNoLimit = errors.New("sets neither tokens nor cost")

// Check refuses a limit that cannot be met or means nothing: no tenant, neither tokens nor
// cost, a bound that is not positive, an unknown currency, a window that is not a day or month.
func Check(l Limit) error {
	switch {
	case l.Tenant == "":
		return fmt.Errorf("a budget names a tenant (or %q for each tenant)", AnyTenant)
	case l.Tokens == 0 && !l.Cost.Known() && l.Cost.Micros == 0:
		return fmt.Errorf("budget of %s %w", l.Name(), ErrNoLimit)
	case l.Tokens < 0 || (l.Tokens == 0 && l.TokensWindow != 0):
		return fmt.Errorf("budget of %s: tokens must be a positive number, got %d", l.Name(), l.Tokens)
	case l.Tokens > 0 && l.TokensWindow != Day && l.TokensWindow != Month:
		return fmt.Errorf("budget of %s: tokens need a window, per day or per month", l.Name())
	}
	if l.Cost.Known() || l.Cost.Micros != 0 {
		if l.Cost.Micros <= 0 || l.Cost.Micros > usage.MaxCount {
			return fmt.Errorf("budget of %s: cost must be positive, got %s", l.Name(), usage.FormatMicros(l.Cost.Micros))
		}
		if err := usage.CheckCurrency(l.Cost.Currency); err != nil {
			return fmt.Errorf("budget of %s: %w", l.Name(), err)
		}
		if l.CostWindow != Day && l.CostWindow != Month {
			return fmt.Errorf("budget of %s: cost needs a window, per day or per month", l.Name())
		}
	}
	return checkReserve(l)
}

// Limits are the configured limits.
func (b *Budgets) Limits() []Limit { return b.limits }

// Spent is told execution's cumulative usage once it is durable. crossed describes the first
// budget this report takes to its limit (in the window of the execution's creation); cancel
// is that budget's setting.
func (b *Budgets) Spent(tenant, provider, executionID string, createdMs int64, cumulative usage.Usage) (crossed string, cancel bool) {
	created := time.UnixMilli(createdMs)
	for _, l := range b.limits {
		if !l.applies(tenant, provider) {
			continue
		}
		for _, c := range l.checks() {
			// A window not read yet takes the report (merged with its scan later) but decides
			// nothing until then.
			s := b.window(tenant, c.window, created)
			s.report(executionID, provider, cumulative)
			if !s.isLoaded() || crossed != "" {
				continue
			}
			spent := s.spent(l.Provider, c.currency)
			if spent >= c.limit {
				crossed = fmt.Sprintf("%s: %s per %s (spent %s)", l.Name(), c.format(c.limit), c.window, c.format(spent))
				cancel = !l.Finish
			} else if b.opts.Refresh > 0 && spent*2 >= c.limit {
				b.rescan(s, min(b.opts.Refresh, RefreshNearLimit))
			}
		}
	}
	return crossed, cancel
}

// check is one bound of a limit: tokens (currency "") or cost in a currency, over a window.
type check struct {
	window   Window
	currency string
	limit    int64
}

func (c check) format(v int64) string {
	if c.currency == "" {
		return fmt.Sprintf("%d tokens", v)
	}
	return usage.FormatMicros(v) + " " + c.currency
}

func (l Limit) checks() []check {
	var out []check
	if l.Tokens > 0 {
		out = append(out, check{window: l.TokensWindow, limit: l.Tokens})
	}
	if l.Cost.Known() {
		out = append(out, check{window: l.CostWindow, currency: l.Cost.Currency, limit: l.Cost.Micros})
	}
	return out
}
