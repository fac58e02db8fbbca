package backend

import (
	"sync/atomic"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/usage"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// What every part of the runtime shares of usage (docs/usage.md): what it asks of the budgets,
// and what an execution keeps of its reports (usagereports.go) and commits with them.

// Budgets keeps tenants within their budgets (package backend/budget; Options.Budgets). The
// runtime asks it what each start must fit in (the store decides, in the start's commit) and
// tells it each usage change.
type Budgets interface {
	// Admission is the store's checks for a start of providerID for tenant created at `at`
	// (nil when no budget applies).
	Admission(tenant, providerID string, at time.Time) []store.BudgetCheck
	// Refusal describes the store's refusal of such a start: a message naming the budget, the
	// seconds to wait, and whether the budget is spent (else only reserved by running ones).
	Refusal(tenant, providerID string, at time.Time, refused *store.AdmissionError) (message string, retryAfterSeconds int64, spent bool)
	// Spent is told an execution's cumulative usage as soon as the report is queued for commit
	// (createdMs: the execution's creation time, the window it counts in). crossed is non-empty when this
	// report takes a budget past its limit, the first time for this execution; cancel says
	// whether that budget's setting is to cancel the execution (else it finishes its turn).
	Spent(tenant, providerID, executionID string, createdMs int64, cumulative usage.Usage) (crossed string, cancel bool)
}

// CodeBudgetExceeded refuses a start while the tenant has spent one of its budgets (an
// extension; HTTP 429 with Retry-After at the end of the budget's window).
const CodeBudgetExceeded = api.ErrorCodeBUDGETEXCEEDED

// UsageNamespace is the provider field of the provider.event data the runtime itself emits:
// {"provider": "harness", "type": "usage", "usage": {…}} and {"provider": "harness", "type":
// "budget.exceeded", …}. A reference client reads them as any provider.event.
const UsageNamespace = "harness"

// usageState is what an execution knows of its usage reports (writeMu held, except warned).
type usageState struct {
	warned atomic.Bool // a bad report was logged: later ones of the execution are not
	// crossed: this execution took a budget to its limit (its budget.exceeded event emitted).
	crossed atomic.Bool
}

// usageChange is what a change adds to an execution's usage: the row it puts and its growth.
type usageChange struct {
	row   store.ExecutionUsage
	delta usage.Usage
}

// storedUsage is the usage a record carries (zero when none).
func storedUsage(rec store.Execution) (usage.Usage, error) {
	if rec.Execution.Usage == nil {
		return usage.Usage{}, nil
	}
	return usage.FromAPI(*rec.Execution.Usage)
}
