// Package usage is the one portable representation of what an execution consumed: token counts
// and a cost, as providers report them (docs/usage.md). Providers build a Usage from their
// protocol's report (ACP's prompt result and usage_update, A2A metadata, a remote edge's
// snapshot, the mock's config); the runtime validates it (Check), stores it with the execution
// and sums it (Totals); budgets compare sums with their limits.
//
// Money is exact: integer micro-units of one ISO 4217 currency, never floating point, so sums
// over thousands of executions are what a ledger would say.
package usage

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"golang.org/x/text/currency"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// MaxCount is the largest count or amount (in micro-units) a report may carry: 2^53−1, the
// largest integer every JSON reader (JavaScript's included) holds exactly. Anything larger is a
// broken or hostile report, not a bill.
const MaxCount = 1<<53 - 1

// MicrosPerUnit is how many micro-units make one unit of a currency.
const MicrosPerUnit = 1_000_000

// Money is an amount of one currency in micro-units. The zero Money (no currency) means "no cost
// reported".
type Money struct {
	Micros   int64
	Currency string // ISO 4217, upper case; "" when no cost is known
}

// Known reports whether m carries a cost.
func (m Money) Known() bool { return m.Currency != "" }

// String is the amount as a decimal with its currency, e.g. "0.0123 USD".
func (m Money) String() string { return FormatMicros(m.Micros) + " " + m.Currency }

// Usage is an execution's consumption, cumulative from its start. A zero field is "none
// reported" (a provider that reports nothing of a kind spent nothing of it, as far as anyone can
// tell).
type Usage struct {
	InputTokens       int64
	OutputTokens      int64
	CachedReadTokens  int64
	CachedWriteTokens int64
	ThoughtTokens     int64
	// TotalTokens is the provider's total; Normalize sets input + output + thought when the
	// provider gave none.
	TotalTokens int64
	Cost        Money
	// ContextSize and ContextUsed are the latest context-window figures (ACP usage_update):
	// a gauge, not a count, so they are never summed or compared by budgets.
	ContextSize int64
	ContextUsed int64
}

// IsZero reports whether u reports nothing at all.
func (u Usage) IsZero() bool { return u == Usage{} }

// Normalize fills TotalTokens when the provider gave none.
func (u Usage) Normalize() Usage {
	if u.TotalTokens == 0 {
		u.TotalTokens = satAdd(satAdd(u.InputTokens, u.OutputTokens), u.ThoughtTokens)
	}
	return u
}

// Check refuses a report no provider can honestly make: a negative count, one beyond MaxCount,
// a cost in a currency ISO 4217 does not know.
func Check(u Usage) error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"inputTokens", u.InputTokens}, {"outputTokens", u.OutputTokens},
		{"cachedReadTokens", u.CachedReadTokens}, {"cachedWriteTokens", u.CachedWriteTokens},
		{"thoughtTokens", u.ThoughtTokens}, {"totalTokens", u.TotalTokens},
		{"cost", u.Cost.Micros}, {"contextSize", u.ContextSize}, {"contextUsed", u.ContextUsed},
	} {
		if f.v < 0 {
			return fmt.Errorf("%s is negative (%d)", f.name, f.v)
		}
		if f.v > MaxCount {
			return fmt.Errorf("%s is beyond 2^53 (%d)", f.name, f.v)
		}
	}
	if u.Cost.Micros != 0 && u.Cost.Currency == "" {
		return errors.New("cost has no currency")
	}
	if u.Cost.Currency != "" {
		if err := CheckCurrency(u.Cost.Currency); err != nil {
			return err
		}
	}
	return nil
}

// CheckGrowth refuses a report that goes back on an earlier one of the same execution: usage is
// cumulative, so a count that shrinks (or a cost that changes currency) is a provider's mistake,
// and taking it would let a later report count twice what the earlier one counted.
func CheckGrowth(prev, next Usage) error {
	pairs := []struct {
		name       string
		prev, next int64
	}{
		{"inputTokens", prev.InputTokens, next.InputTokens}, {"outputTokens", prev.OutputTokens, next.OutputTokens},
		{"cachedReadTokens", prev.CachedReadTokens, next.CachedReadTokens},
		{"cachedWriteTokens", prev.CachedWriteTokens, next.CachedWriteTokens},
		{"thoughtTokens", prev.ThoughtTokens, next.ThoughtTokens}, {"totalTokens", prev.TotalTokens, next.TotalTokens},
		{"cost", prev.Cost.Micros, next.Cost.Micros},
	}
	for _, p := range pairs {
		if p.next < p.prev {
			return fmt.Errorf("%s went down from %d to %d (usage is cumulative)", p.name, p.prev, p.next)
		}
	}
	if prev.Cost.Currency != "" && next.Cost.Currency != prev.Cost.Currency {
		return fmt.Errorf("cost changed currency from %s to %q", prev.Cost.Currency, next.Cost.Currency)
	}
	return nil
}

// CheckCurrency accepts an ISO 4217 code (upper case, as the wire carries it).
func CheckCurrency(code string) error {
	if len(code) != 3 || strings.ToUpper(code) != code {
		return fmt.Errorf("currency %q is not an ISO 4217 code (three upper-case letters)", code)
	}
	if _, err := currency.ParseISO(code); err != nil {
		return fmt.Errorf("currency %q is not an ISO 4217 code", code)
	}
	return nil
}

// Sub is what next adds to prev (CheckGrowth holds); the context gauges are next's.
func Sub(next, prev Usage) Usage {
	d := Usage{
		InputTokens:       next.InputTokens - prev.InputTokens,
		OutputTokens:      next.OutputTokens - prev.OutputTokens,
		CachedReadTokens:  next.CachedReadTokens - prev.CachedReadTokens,
		CachedWriteTokens: next.CachedWriteTokens - prev.CachedWriteTokens,
		ThoughtTokens:     next.ThoughtTokens - prev.ThoughtTokens,
		TotalTokens:       next.TotalTokens - prev.TotalTokens,
		Cost:              Money{Micros: next.Cost.Micros - prev.Cost.Micros, Currency: next.Cost.Currency},
		ContextSize:       next.ContextSize,
		ContextUsed:       next.ContextUsed,
	}
	return d
}

// satAdd adds without overflowing: a sum of many executions' counts, each at most MaxCount,
// stops at MaxInt64 instead of wrapping into a negative total.
func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// ParseAmount reads a decimal amount ("12", "0.0123") into micro-units: digits, at most six of
// them after the point, at most MaxCount micro-units.
func ParseAmount(s string) (int64, error) {
	whole, frac, hasPoint := strings.Cut(s, ".")
	if whole == "" || (hasPoint && (frac == "" || len(frac) > 6)) || !digits(whole) || !digits(frac) {
		return 0, fmt.Errorf("amount %q is not a decimal with at most six fractional digits", s)
	}
	frac += strings.Repeat("0", 6-len(frac))
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > MaxCount/MicrosPerUnit {
		return 0, fmt.Errorf("amount %q is too large", s)
	}
	f, _ := strconv.ParseInt(frac, 10, 64)
	if m := w*MicrosPerUnit + f; m <= MaxCount {
		return m, nil
	}
	return 0, fmt.Errorf("amount %q is too large", s)
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// FormatMicros writes micro-units as the shortest exact decimal: 12300 → "0.0123".
func FormatMicros(m int64) string {
	sign := ""
	if m < 0 {
		sign, m = "-", -m
	}
	whole, frac := m/MicrosPerUnit, m%MicrosPerUnit
	if frac == 0 {
		return sign + strconv.FormatInt(whole, 10)
	}
	f := strings.TrimRight(fmt.Sprintf("%06d", frac), "0")
	return sign + strconv.FormatInt(whole, 10) + "." + f
}

// MicrosFromFloat converts a provider's floating-point amount (ACP's cost.amount is a JSON
// number) to micro-units, rounded to the nearest: the one place a float meets money, on the way
// in. NaN, infinities, negatives and amounts beyond MaxCount micro-units are refused.
func MicrosFromFloat(amount float64) (int64, error) {
	if math.IsNaN(amount) || math.IsInf(amount, 0) || amount < 0 {
		return 0, fmt.Errorf("amount %v is not a non-negative number", amount)
	}
	m := math.Round(amount * MicrosPerUnit)
	if m > MaxCount {
		return 0, fmt.Errorf("amount %v is beyond 2^53 micro-units", amount)
	}
	return int64(m), nil
}

// ToAPI is u as the wire carries it (the snapshot's usage, the usage event's data): the counts a
// provider reported, and the cost when known.
func ToAPI(u Usage) api.Usage {
	var out api.Usage
	set := func(dst **int64, v int64) {
		if v != 0 {
			*dst = &v
		}
	}
	set(&out.InputTokens, u.InputTokens)
	set(&out.OutputTokens, u.OutputTokens)
	set(&out.CachedReadTokens, u.CachedReadTokens)
	set(&out.CachedWriteTokens, u.CachedWriteTokens)
	set(&out.ThoughtTokens, u.ThoughtTokens)
	set(&out.TotalTokens, u.TotalTokens)
	set(&out.ContextSize, u.ContextSize)
	set(&out.ContextUsed, u.ContextUsed)
	if u.Cost.Known() {
		out.Cost = &api.Cost{Amount: FormatMicros(u.Cost.Micros), Currency: u.Cost.Currency}
	}
	return out
}

// FromAPI reads the wire form back (a stored snapshot, a remote edge's snapshot). It checks the
// amount's syntax; Check does the rest.
func FromAPI(a api.Usage) (Usage, error) {
	get := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	u := Usage{
		InputTokens: get(a.InputTokens), OutputTokens: get(a.OutputTokens),
		CachedReadTokens: get(a.CachedReadTokens), CachedWriteTokens: get(a.CachedWriteTokens),
		ThoughtTokens: get(a.ThoughtTokens), TotalTokens: get(a.TotalTokens),
		ContextSize: get(a.ContextSize), ContextUsed: get(a.ContextUsed),
	}
	if a.Cost != nil {
		m, err := ParseAmount(a.Cost.Amount)
		if err != nil {
			return Usage{}, err
		}
		u.Cost = Money{Micros: m, Currency: a.Cost.Currency}
	}
	return u, nil
}
