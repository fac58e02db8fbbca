package backend

import (
	"sync/atomic"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/usage"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The types of usage (usage_report.go): what the runtime tells and asks of the budgets and of
// metrics, and what an execution keeps of its reports.

// UsageNamespace is the provider field of the provider.event data the runtime itself emits:
// {"provider": "harness", "type": "usage", "usage": {…}} and {"provider": "harness", "type":
// "budget.exceeded", …}. A reference client reads them as any provider.event.
const UsageNamespace = "harness"

// Budgets keeps tenants within their budgets (package backend/budget; Options.Budgets). The
// runtime asks it before each start and tells it each committed usage change.
type Budgets interface {
	// Admit is asked before a start of providerID for tenant: refused, it answers a message
	// naming the budget and how long until its window ends.
	Admit(tenant, providerID string) (refusal string, retryAfterSeconds int64, refused bool)
	// Spent is told an execution's cumulative usage as soon as the report is queued for commit
	// (createdMs: the execution's creation time, the window it counts in). crossed is non-empty when this
	// report takes a budget past its limit, the first time for this execution; cancel says
	// whether that budget's setting is to cancel the execution (else it finishes its turn).
	Spent(tenant, providerID, executionID string, createdMs int64, cumulative usage.Usage) (crossed string, cancel bool)
}

// UsageObserver is the optional part of an Observer that counts usage (Prometheus): the
// growth of one execution's usage, once durable.
type UsageObserver interface {
	UsageAdded(tenant, providerID string, delta usage.Usage)
}

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

// CodeBudgetExceeded refuses a start while the tenant has spent one of its budgets (an
// extension; HTTP 429 with Retry-After at the end of the budget's window).
const CodeBudgetExceeded = api.ErrorCodeBUDGETEXCEEDED
