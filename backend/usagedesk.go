package backend

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/usage"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// usageDesk is the runtime's side of usage and budgets (docs/usage.md) that is not one
// execution's: the sums of GET /v1/usage, and what a start must fit in (its admission). An
// execution's own reports are usagereports.go. The Runtime embeds it: Usage is the runtime's
// own API.
type usageDesk struct {
	store   store.Store
	open    func() error // Runtime.checkOpen: ErrClosed once the runtime closed
	budgets Budgets      // Options.Budgets; nil without budgets
}

// A start's admission (docs/usage.md "Budgets", "Bounds on running executions"): the tenant's
// max_running and budgets are preconditions of the commit that creates the execution
// (store.Admission), decided by the store against every node's executions, so concurrent starts
// can neither exceed max_running nor all spend the same room in a budget.

// admission is what a start of providerID by tenant, created at `at`, must fit in; nil when
// nothing bounds it.
func (u *usageDesk) admission(tenant Tenant, providerID, executionID string, at time.Time) *store.Admission {
	a := &store.Admission{ExecutionID: executionID, Tenant: tenant.ID, ProviderID: providerID, MaxRunning: tenant.MaxRunning}
	if b := u.budgets; b != nil {
		a.Budgets = b.Admission(tenant.ID, providerID, at)
	}
	if a.MaxRunning <= 0 && len(a.Budgets) == 0 {
		return nil
	}
	return a
}

// admissionRefused is the answer to a start the store refused: RATE_LIMITED for max_running or
// a budget that running executions have reserved (a short Retry-After), BUDGET_EXCEEDED with
// Retry-After at the window's end for a budget that is spent.
func (u *usageDesk) admissionRefused(tenant Tenant, providerID string, at time.Time, refused *store.AdmissionError) *Error {
	if refused.Reason == store.RefusedRunning || u.budgets == nil {
		return errTooManyRunning(tenant.MaxRunning)
	}
	message, retryAfter, spent := u.budgets.Refusal(tenant.ID, providerID, at, refused)
	code := CodeRateLimited
	if spent {
		code = CodeBudgetExceeded
	}
	return &Error{Code: code, Message: message, RetryAfter: max(retryAfter, 1)}
}

// GET /v1/usage: the caller's tenant's usage over a range of creation times, summed from the
// store's usage rows, so every node answers the same and the sum is exact: each execution's
// row holds its cumulative usage, replaced (never added to) by each report.

// UsageQuery is what Usage sums.
type UsageQuery struct {
	From, To time.Time // [From, To), by the executions' creation time
	GroupBy  string    // "", "provider", "conversation" or "day"
	Limit    int       // most groups answered; 0: DefaultUsageGroups
}

// Usage query bounds.
const (
	DefaultUsageGroups = 100
	MaxUsageGroups     = 1000
	// MaxUsageRange bounds a range: a sum reads every usage row in it.
	MaxUsageRange = 366 * 24 * time.Hour
)

// Usage refusals, each a VALIDATION_ERROR naming its parameter at the HTTP edge.
var (
	ErrUsageRange   = newError(CodeValidation, "from must be before to, at most 366 days apart")
	ErrUsageGroupBy = newError(CodeValidation, "groupBy must be one of provider, conversation, day")
	ErrUsageLimit   = newError(CodeValidation, "limit must be an integer from 1 to 1000")
)

// Usage sums the usage of the executions ctx's tenant created in [q.From, q.To).
func (u *usageDesk) Usage(ctx context.Context, q UsageQuery) (api.UsageReport, error) {
	if err := u.open(); err != nil {
		return api.UsageReport{}, err
	}
	if !q.From.Before(q.To) || q.To.Sub(q.From) > MaxUsageRange {
		return api.UsageReport{}, ErrUsageRange
	}
	keyOf, ok := usageGroupKeys[q.GroupBy]
	if !ok {
		return api.UsageReport{}, ErrUsageGroupBy
	}
	if q.Limit == 0 {
		q.Limit = DefaultUsageGroups
	}
	if q.Limit < 1 || q.Limit > MaxUsageGroups {
		return api.UsageReport{}, ErrUsageLimit
	}
	var total usage.Totals
	groups := map[string]*usage.Totals{}
	sq := store.UsageQuery{Tenant: TenantFrom(ctx).ID, FromMs: q.From.UnixMilli(), ToMs: q.To.UnixMilli()}
	err := u.store.ForEachUsage(sq, func(row store.ExecutionUsage) bool {
		total.Add(row.Usage, 1)
		if keyOf != nil {
			key := keyOf(row)
			g := groups[key]
			if g == nil {
				g = &usage.Totals{}
				groups[key] = g
			}
			g.Add(row.Usage, 1)
		}
		return ctx.Err() == nil
	})
	if err != nil {
		return api.UsageReport{}, internalError("read usage", err)
	}
	if err := ctx.Err(); err != nil {
		return api.UsageReport{}, err
	}
	report := api.UsageReport{
		From: formatTime(q.From), To: formatTime(q.To), Total: total.ToAPI(), Groups: []api.UsageGroup{},
	}
	if q.GroupBy != "" {
		by := api.UsageReportGroupBy(q.GroupBy)
		report.GroupBy = &by
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	if q.GroupBy == "day" {
		slices.Sort(keys)
	} else {
		// The most expensive first: cost (all currencies' micro-units, an order only), tokens.
		slices.SortFunc(keys, func(a, b string) int {
			ga, gb := groups[a], groups[b]
			return cmp.Or(cmp.Compare(gb.CostMicros(), ga.CostMicros()), cmp.Compare(gb.TotalTokens, ga.TotalTokens), cmp.Compare(a, b))
		})
	}
	for _, k := range keys[:min(len(keys), q.Limit)] {
		report.Groups = append(report.Groups, api.UsageGroup{Key: k, Total: groups[k].ToAPI()})
	}
	return report, nil
}

// usageGroupKeys names each grouping's key of a row; nil: no groups.
var usageGroupKeys = map[string]func(store.ExecutionUsage) string{
	"":             nil,
	"provider":     func(r store.ExecutionUsage) string { return r.ProviderID },
	"conversation": func(r store.ExecutionUsage) string { return r.ConversationID },
	"day": func(r store.ExecutionUsage) string {
		return time.UnixMilli(r.CreatedMs).UTC().Format(time.DateOnly)
	},
}

// formatTime is a protocol timestamp: UTC, three fractional digits, Z.
func formatTime(t time.Time) api.Timestamp {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}
