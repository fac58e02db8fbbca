package run

import (
	"time"

	"github.com/harness-edge/harness-edge/internal/nemesis/history"
)

// The two tenants the clients play. The budget and the standing approval rule are the second
// tenant's, so the first tenant's approvals are answered by people and expiry only, and the
// second's by people, the rule and expiry at once (one winner each).
const (
	tenantAlpha  = "alpha"
	tenantBeta   = "beta"
	budgetTenant = tenantBeta
	ruleTenant   = tenantBeta
)

// Settings are the bounds the nodes are configured with (caddyfile.go) and the checker holds
// the history to (history.Settings, in the run line).
type Settings struct {
	Lease         time.Duration
	StoreTimeout  time.Duration
	CancelTimeout time.Duration
	MaxRunning    int
	BudgetTokens  int
	// UsageStepTokens is what one usage report of the mock adds (config "usage").
	UsageStepTokens int
	// ActionTimeout is the actionTimeoutSeconds of the starts whose approval expiry may answer.
	ActionTimeout time.Duration
	Quiet         time.Duration
}

// defaultSettings are short enough for a run of minutes to see takeovers and expiries, long
// enough that a node starved of CPU on a shared 2-core machine keeps its lease when no fault
// touched it (faults/main_test.go chose a 5 s lease for the same reason).
func defaultSettings(lease time.Duration, store string) Settings {
	s := Settings{
		Lease:           lease,
		StoreTimeout:    5 * time.Second,
		CancelTimeout:   5 * time.Second,
		MaxRunning:      10,
		BudgetTokens:    2000,
		UsageStepTokens: 20,
		ActionTimeout:   3 * time.Second,
	}
	s.Quiet = quietPeriod(s, store)
	return s
}

// quietPeriod is how long the run waits, faults healed, before the final reads: two leases for
// the owner of an unfinished execution to be declared gone and claimed, the store's and the
// cancel's timeouts, and slack for a loaded machine. One bbolt node has no lease to lose (a
// restart fails what was left running at once): a cancel's cleanup and an approval's expiry.
func quietPeriod(s Settings, store string) time.Duration {
	if store == "bolt" {
		return s.CancelTimeout + s.ActionTimeout + 5*time.Second
	}
	return 2*s.Lease + s.StoreTimeout + s.CancelTimeout + 5*time.Second
}

// history is what the run line records for the checker.
func (s Settings) history() history.Settings {
	return history.Settings{
		// A cancel answers within the store's timeout (503 past it) plus the cleanup bound
		// (cancel_timeout) plus slack; a respond within the store's timeout plus slack. A
		// request cut by a fault has no answer and is not held to either.
		CancelBound:  history.Duration(s.StoreTimeout + s.CancelTimeout + 5*time.Second),
		RespondBound: history.Duration(s.StoreTimeout + 5*time.Second),
		MaxRunning:   s.MaxRunning,
		QuietPeriod:  history.Duration(s.Quiet),
		Tenants:      []string{tenantAlpha, tenantBeta},
		// docs/usage.md, "The bound": the limit plus one usage report of each running
		// execution that crossed it; at most max_running run at once.
		Budgets: []history.Budget{{Tenant: budgetTenant, Tokens: int64(s.BudgetTokens),
			Slack: int64(s.MaxRunning * s.UsageStepTokens)}},
		RequestTimeout: history.Duration(requestGuard),
	}
}
