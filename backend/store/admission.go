package store

import (
	"errors"
	"fmt"

	"github.com/harness-edge/harness-edge/backend/usage"
)

// A tenant's bound on running executions and its usage budgets (docs/usage.md) are
// preconditions the store checks in the commit that creates an execution, as it checks a busy
// policy (turns.go): what a start sees of the tenant's other executions is what the store holds
// at that commit, so concurrent starts — on one node or several — can never all pass on the same
// stale picture. bbolt has one writer; PostgreSQL serializes a tenant's admissions with a lock
// of the tenant taken before they read.
//
// An execution's cost is unknown when it starts, so a budget RESERVES: each non-terminal
// execution counts the larger of what it reported so far and the reservation, a terminal one
// what it reported. A start is admitted if spent + reserved + its own reservation is within
// the limit. The reservation is the budget's setting (BudgetCheck.Reserve) or, unset, the largest
// usage among the tenant's recently settled executions on that budget. With no estimate, or less
// left than that, a start is admitted only alone (no other execution of the budget running in
// its window) while the limit is not spent, and reserves all that is left: the budget admits
// one execution at a time until one has settled, or until it is spent.

// Admission asks the store to apply its batch only if the tenant's other executions leave room
// for ExecutionID (whose record is in the batch). Refused, the batch fails with an
// *AdmissionError (errors.Is ErrNotAdmitted) and nothing of it is applied.
type Admission struct {
	ExecutionID string
	Tenant      string
	ProviderID  string
	// MaxRunning, when positive, refuses the start while the tenant already has that many
	// non-terminal executions, wherever they run.
	MaxRunning int
	Budgets    []BudgetCheck
}

// BudgetCheck is one bound of a budget: tokens, or cost in one currency, over a window.
type BudgetCheck struct {
	// Provider, when set, counts only that provider's executions (the budget's own provider).
	Provider string
	// Currency "" bounds total tokens; otherwise the cost in that currency, in micro-units.
	Currency string
	Limit    int64
	// FromMs and ToMs are the window, by the executions' creation time: [FromMs, ToMs).
	FromMs, ToMs int64
	// RecentFromMs: executions settled and created from here on (up to ToMs) estimate the
	// reservation when Reserve is not set (the runtime: a day before the window starts).
	RecentFromMs int64
	// Reserve, when positive, is what each execution reserves.
	Reserve int64
}

// TenantExecution is what a store reads of one of the tenant's executions to settle an
// admission: every non-terminal one, and those with usage created since the earliest
// RecentFromMs.
type TenantExecution struct {
	ID, ProviderID string
	CreatedMs      int64
	Unfinished     bool
	Usage          usage.Usage
}

// ErrNotAdmitted is matched (errors.Is) by the *AdmissionError of a refused start. Nothing of
// its batch is applied; the Committer retries its neighbours alone, as for ErrBusy.
var ErrNotAdmitted = errors.New("start not admitted")

// Why a start was refused.
const (
	RefusedRunning  = "running"  // the tenant has MaxRunning non-terminal executions
	RefusedSpent    = "spent"    // the limit is spent: only the window's end helps
	RefusedReserved = "reserved" // the running executions' reservations fill the rest: their end helps
)

// AdmissionError says why a start was refused.
type AdmissionError struct {
	Reason  string
	Running int // the tenant's non-terminal executions (RefusedRunning)
	// Check is the index in Admission.Budgets of the refusing budget, with what it found.
	Check                        int
	Spent, Reserved, Reservation int64
	Outstanding                  int // non-terminal executions counted against the budget
}

func (e *AdmissionError) Error() string {
	if e.Reason == RefusedRunning {
		return fmt.Sprintf("start refused: %d executions of the tenant are running", e.Running)
	}
	return fmt.Sprintf("start refused (%s): spent %d, reserved %d by %d running, this start reserves %d",
		e.Reason, e.Spent, e.Reserved, e.Outstanding, e.Reservation)
}

// Is makes errors.Is(err, ErrNotAdmitted) match.
func (e *AdmissionError) Is(target error) bool { return target == ErrNotAdmitted }

// SettleAdmission decides a against view, the tenant's executions as the store holds them at
// the commit (the batch's own execution among them or not). An execution the store already
// holds was admitted when it was first written (a commit retried after its outcome was lost):
// it passes.
func SettleAdmission(a *Admission, view map[string]TenantExecution) error {
	if _, held := view[a.ExecutionID]; held {
		return nil
	}
	if a.MaxRunning > 0 {
		running := 0
		for _, x := range view {
			if x.Unfinished {
				running++
			}
		}
		if running >= a.MaxRunning {
			return &AdmissionError{Reason: RefusedRunning, Running: running}
		}
	}
	for i, c := range a.Budgets {
		if err := c.settle(view); err != nil {
			err.Check = i
			return err
		}
	}
	return nil
}

// settle checks one bound; nil when the start fits.
func (c BudgetCheck) settle(view map[string]TenantExecution) *AdmissionError {
	var spent, largest int64
	var usages []int64 // of the unfinished executions in the window
	settled := false
	for _, x := range view {
		if c.Provider != "" && x.ProviderID != c.Provider {
			continue
		}
		v := c.amount(x.Usage)
		if !x.Unfinished && x.CreatedMs >= c.RecentFromMs && x.CreatedMs < c.ToMs && v > 0 {
			settled, largest = true, max(largest, v)
		}
		if x.CreatedMs < c.FromMs || x.CreatedMs >= c.ToMs {
			continue
		}
		spent += v
		if x.Unfinished {
			usages = append(usages, v)
		}
	}
	refusal := &AdmissionError{Spent: spent, Outstanding: len(usages), Reservation: max(c.Limit-spent, 0)}
	if spent >= c.Limit {
		refusal.Reason = RefusedSpent // only the window's end helps
		return refusal
	}
	reserve := c.Reserve
	if reserve <= 0 && settled {
		reserve = largest
	}
	if reserve > 0 {
		var reserved int64
		for _, used := range usages {
			reserved += max(reserve-used, 0)
		}
		if spent+reserved+reserve <= c.Limit {
			return nil
		}
		refusal.Reserved, refusal.Reservation = reserved, reserve
	}
	// No estimate, or less left than running executions and this one reserve: the start may
	// run alone, reserving all that is left (the running execution's own check stops it at the
	// limit), so the budget admits one at a time.
	if len(usages) == 0 {
		return nil
	}
	if reserve <= 0 {
		refusal.Reserved = refusal.Reservation
	}
	refusal.Reason = RefusedReserved // a running execution's end helps
	return refusal
}

// amount is u's measure for the check: total tokens, or the cost in its currency.
func (c BudgetCheck) amount(u usage.Usage) int64 {
	if c.Currency == "" {
		return u.TotalTokens
	}
	if u.Cost.Currency != c.Currency {
		return 0 // no exchange rate here: other currencies do not count against it
	}
	return u.Cost.Micros
}

// AdmissionView is a tenant's executions as a commit reads and changes them, for the stores'
// admissions: Record and Usage lay the group's earlier batches over what was read.
type AdmissionView map[string]TenantExecution

// Record lays a written execution record over the view.
func (v AdmissionView) Record(rec Execution) {
	x := v[rec.Execution.ID]
	x.ID, x.ProviderID = rec.Execution.ID, rec.Execution.ProviderID
	x.CreatedMs = int64(PositionOf(rec.Execution).CreatedMs)
	x.Unfinished = !rec.Execution.State.Terminal()
	v[x.ID] = x
}

// UsageRow lays a written usage row over the view (cumulative: the larger value stands).
func (v AdmissionView) UsageRow(r ExecutionUsage) {
	x, ok := v[r.ExecutionID]
	if !ok {
		x = TenantExecution{ID: r.ExecutionID, ProviderID: r.ProviderID, CreatedMs: r.CreatedMs}
	}
	if r.Usage.TotalTokens >= x.Usage.TotalTokens && r.Usage.Cost.Micros >= x.Usage.Cost.Micros {
		x.Usage = r.Usage
	}
	v[r.ExecutionID] = x
}
