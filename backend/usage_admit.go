package backend

import (
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
)

// A start's admission (docs/usage.md "Budgets", "Bounds on running executions"): the tenant's
// max_running and budgets are preconditions of the commit that creates the execution
// (store.Admission), decided by the store against every node's executions, so concurrent starts
// can neither exceed max_running nor all spend the same room in a budget.

// admission is what a start of providerID by tenant, created at `at`, must fit in; nil when
// nothing bounds it.
func (r *Runtime) admission(tenant Tenant, providerID, executionID string, at time.Time) *store.Admission {
	a := &store.Admission{ExecutionID: executionID, Tenant: tenant.ID, ProviderID: providerID, MaxRunning: tenant.MaxRunning}
	if b := r.opts.Budgets; b != nil {
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
func (r *Runtime) admissionRefused(tenant Tenant, providerID string, at time.Time, refused *store.AdmissionError) *Error {
	if refused.Reason == store.RefusedRunning || r.opts.Budgets == nil {
		return errTooManyRunning(tenant.MaxRunning)
	}
	message, retryAfter, spent := r.opts.Budgets.Refusal(tenant.ID, providerID, at, refused)
	code := CodeRateLimited
	if spent {
		code = CodeBudgetExceeded
	}
	return &Error{Code: code, Message: message, RetryAfter: max(retryAfter, 1)}
}
