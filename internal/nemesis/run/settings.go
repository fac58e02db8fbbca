package run

import "time"

// The two tenants the clients play. The budget and the standing approval rule are the second
// tenant's, so the first tenant's approvals are answered by people and expiry only, and the
// second's by people, the rule and expiry at once (one winner each).
const (
	tenantAlpha  = "alpha"
	tenantBeta   = "beta"
	budgetTenant = tenantBeta
	ruleTenant   = tenantBeta
)

// Settings are the bounds the nodes are configured with and the checker holds the history to;
// the run line records them (history field "settings").
type Settings struct {
	Lease         time.Duration `json:"-"`
	StoreTimeout  time.Duration `json:"-"`
	CancelTimeout time.Duration `json:"-"`
	MaxRunning    int           `json:"maxRunning"`
	BudgetTokens  int           `json:"budgetTokens"`
	// UsageStepTokens is the most one usage report of the mock adds (config "usage"): the budget
	// bound of docs/usage.md is the limit plus one report of each running execution that crossed it.
	UsageStepTokens int           `json:"usageStepTokens"`
	Quiet           time.Duration `json:"-"`
	// ActionTimeout is the actionTimeoutSeconds of the starts whose approval is left to expiry.
	ActionTimeout time.Duration `json:"-"`

	// The durations as strings, for the history (Go's duration syntax).
	LeaseText         string   `json:"lease"`
	StoreTimeoutText  string   `json:"storeTimeout"`
	CancelTimeoutText string   `json:"cancelTimeout"`
	RespondBoundText  string   `json:"respondBound"`
	CancelBoundText   string   `json:"cancelBound"`
	QuietText         string   `json:"quiet"`
	ActionTimeoutText string   `json:"actionTimeout"`
	Tenants           []string `json:"tenants"`
	BudgetTenant      string   `json:"budgetTenant"`
	RuleTenant        string   `json:"ruleTenant"`
}

// defaultSettings are short enough for a run of minutes to see takeovers and expiries, long
// enough that a node starved of CPU on a shared 2-core machine keeps its lease when no fault
// touched it (faults/main_test.go chose 5 s for the same reason).
func defaultSettings(lease time.Duration) Settings {
	s := Settings{
		Lease:           lease,
		StoreTimeout:    5 * time.Second,
		CancelTimeout:   5 * time.Second,
		MaxRunning:      6,
		BudgetTokens:    2000,
		UsageStepTokens: 20,
		ActionTimeout:   3 * time.Second,
		Tenants:         []string{tenantAlpha, tenantBeta},
		BudgetTenant:    budgetTenant,
		RuleTenant:      ruleTenant,
	}
	// The quiet period: a lease for the owner of a stranded execution to be declared gone, a
	// second for the claim, plus the store's and the cancel's timeouts and slack for a loaded
	// machine.
	s.Quiet = 2*s.Lease + s.StoreTimeout + s.CancelTimeout + 5*time.Second
	s.LeaseText = s.Lease.String()
	s.StoreTimeoutText = s.StoreTimeout.String()
	s.CancelTimeoutText = s.CancelTimeout.String()
	// A cancel or a respond answers within the store's timeout (503 past it) plus the cancel's
	// cleanup bound plus slack; a request cut by a fault has no answer and is not held to it.
	s.CancelBoundText = (s.StoreTimeout + s.CancelTimeout + 5*time.Second).String()
	s.RespondBoundText = (s.StoreTimeout + 5*time.Second).String()
	s.QuietText = s.Quiet.String()
	s.ActionTimeoutText = s.ActionTimeout.String()
	return s
}
