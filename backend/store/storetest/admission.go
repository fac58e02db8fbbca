package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/usage"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// An Admission sees its tenant's other executions as the store holds them when its batch is
// applied (earlier batches of the same group included), and nothing else: other tenants' are
// not counted. Refused, its batch fails with an *AdmissionError (errors.Is ErrNotAdmitted),
// nothing of it is applied, and its neighbours are.

// admissionBatch is the start of execution n of tenant under a.
func admissionBatch(n int, tenant string, a store.Admission) *store.Batch {
	rec := execution(n, 1, api.ExecutionStateQueued, tenant)
	a.ExecutionID, a.Tenant, a.ProviderID = rec.Execution.ID, tenant, rec.Execution.ProviderID
	return &store.Batch{
		Executions: []store.Execution{rec},
		Events:     []store.StoredEvent{event(rec.Execution.ID, 1, api.StandardEventTypeRunQueued)},
		Admissions: []store.Admission{a},
	}
}

// settledBatch ends execution n of tenant, having spent tokens.
func settledBatch(n int, tenant string, tokens int64) *store.Batch {
	rec := execution(n, 1, api.ExecutionStateSucceeded, tenant)
	return &store.Batch{
		Executions: []store.Execution{rec},
		Usage: []store.ExecutionUsage{{ExecutionID: rec.Execution.ID, Tenant: tenant, ConversationID: conversationID(1),
			ProviderID: "mock", CreatedMs: int64(store.PositionOf(rec.Execution).CreatedMs), Usage: usage.Usage{TotalTokens: tokens}}},
	}
}

// tokenBudget is a day's budget of limit tokens around the suite's records (base's day).
func tokenBudget(limit, reserve int64) store.BudgetCheck {
	day := base.Truncate(24 * time.Hour)
	return store.BudgetCheck{Limit: limit, Reserve: reserve, FromMs: day.UnixMilli(),
		ToMs: day.Add(24 * time.Hour).UnixMilli(), RecentFromMs: day.Add(-24 * time.Hour).UnixMilli()}
}

// admitted lists which of batches were applied, failing t on any error but a refusal.
func admitted(t *testing.T, errs []error) (n int, refusals []*store.AdmissionError) {
	t.Helper()
	for i, err := range errs {
		var ae *store.AdmissionError
		switch {
		case err == nil:
			n++
		case errors.Is(err, store.ErrNotAdmitted) && errors.As(err, &ae):
			refusals = append(refusals, ae)
		default:
			t.Fatalf("batch %d: %v, want nil or an *AdmissionError", i, err)
		}
	}
	return n, refusals
}

func testAdmissions(t *testing.T, open func(t *testing.T) store.Store) {
	s := openStore(t, open)
	t.Run("max running", func(t *testing.T) {
		commit(t, s, &store.Batch{Executions: []store.Execution{
			execution(1000, 1, api.ExecutionStateRunning, "alice"),
			execution(1001, 1, api.ExecutionStateAwaitingApproval, "alice"),
			execution(1002, 1, api.ExecutionStateSucceeded, "alice"),
			execution(1003, 1, api.ExecutionStateRunning, "bob"),
		}})
		three := store.Admission{MaxRunning: 3}
		commit(t, s, admissionBatch(1004, "alice", three)) // 2 running: admitted
		err := s.Commit(admissionBatch(1005, "alice", three))
		var ae *store.AdmissionError
		if !errors.As(err, &ae) || ae.Reason != store.RefusedRunning || ae.Running != 3 {
			t.Fatalf("a fourth start under max 3: %v, want refused with 3 running", err)
		}
		if _, found, _ := s.Execution(executionID(1005)); found {
			t.Fatal("the refused start was applied")
		}
		// The same start again (a commit retried after its outcome was lost) passes.
		again := admissionBatch(1004, "alice", three)
		again.Events = nil
		commit(t, s, again)
		// One ends: room for one, and the others of the group are refused, their neighbours not.
		errs := submitAll(t, s, []*store.Batch{
			{Executions: []store.Execution{execution(1000, 1, api.ExecutionStateFailed, "alice")}},
			admissionBatch(1006, "alice", three),
			admissionBatch(1007, "alice", three),
			{Executions: []store.Execution{execution(1008, 1, api.ExecutionStateQueued, "bob")}},
			admissionBatch(1009, "bob", three),
		})
		for i, want := range []error{nil, nil, store.ErrNotAdmitted, nil, nil} {
			if !errors.Is(errs[i], want) || (want == nil && errs[i] != nil) {
				t.Fatalf("batch %d: %v, want %v", i, errs[i], want)
			}
		}
	})

	t.Run("30 at once", func(t *testing.T) {
		var batches []*store.Batch
		for i := range 30 {
			batches = append(batches, admissionBatch(1100+i, "carol", store.Admission{MaxRunning: 3}))
		}
		if n, _ := admitted(t, submitAll(t, s, batches)); n != 3 {
			t.Fatalf("30 starts under max 3 at once: %d admitted", n)
		}
	})

	t.Run("budget without a reservation", func(t *testing.T) {
		b := store.Admission{Budgets: []store.BudgetCheck{tokenBudget(500, 0)}}
		commit(t, s, admissionBatch(1200, "dave", b)) // nothing to estimate from: alone
		n, refusals := admitted(t, submitAll(t, s, []*store.Batch{admissionBatch(1201, "dave", b), admissionBatch(1202, "dave", b)}))
		if n != 0 || refusals[0].Reason != store.RefusedReserved {
			t.Fatalf("starts beside the first, with nothing settled: %d admitted, %+v", n, refusals)
		}
		commit(t, s, settledBatch(1200, "dave", 50)) // spent 50: each start reserves 50
		var batches []*store.Batch
		for i := range 30 {
			batches = append(batches, admissionBatch(1210+i, "dave", b))
		}
		n, refusals = admitted(t, submitAll(t, s, batches))
		if n != 9 || refusals[0].Reason != store.RefusedReserved || refusals[0].Reserved != 450 {
			t.Fatalf("30 starts with 450 tokens left at 50 each: %d admitted, first refusal %+v", n, refusals[0])
		}
		// Settled: what was not used is returned. Nine of 10, 0, …: room again.
		for i := range 30 {
			if _, found, _ := s.Execution(executionID(1210 + i)); found {
				commit(t, s, settledBatch(1210+i, "dave", 10))
			}
		}
		commit(t, s, admissionBatch(1240, "dave", b))
		// A running execution that overran its reservation counts what it used.
		commit(t, s, &store.Batch{Usage: settledBatch(1240, "dave", 400).Usage})
		err := s.Commit(admissionBatch(1241, "dave", b))
		var ae *store.AdmissionError
		if !errors.As(err, &ae) || ae.Reason != store.RefusedSpent || ae.Spent != 50+90+400 {
			t.Fatalf("a start once 540 of 500 are spent: %v, want refused as spent", err)
		}
	})

	t.Run("budget with a reservation", func(t *testing.T) {
		b := store.Admission{Budgets: []store.BudgetCheck{tokenBudget(500, 100)}}
		var batches []*store.Batch
		for i := range 30 {
			batches = append(batches, admissionBatch(1300+i, "erin", b))
		}
		if n, _ := admitted(t, submitAll(t, s, batches)); n != 5 {
			t.Fatalf("30 starts reserving 100 of 500: %d admitted", n)
		}
		// Another tenant's spending and other windows do not count.
		other := b
		other.Budgets = []store.BudgetCheck{tokenBudget(500, 100)}
		other.Budgets[0].FromMs, other.Budgets[0].ToMs = other.Budgets[0].ToMs, other.Budgets[0].ToMs+24*3600*1000
		commit(t, s, admissionBatch(1340, "frank", b))
		commit(t, s, admissionBatch(1341, "erin", other))
	})
}

// Admissions of one tenant on two nodes at once are serialized: exactly MaxRunning of 30
// starts are applied, and a budget's reservations hold over both.
func testAdmissionsAcrossNodes(t *testing.T, open OpenNode) {
	a, b := openNode(t, open, "a"), openNode(t, open, "b")
	for _, tc := range []struct {
		tenant string
		adm    store.Admission
		want   int
	}{
		{"carol", store.Admission{MaxRunning: 3}, 3},
		{"dave", store.Admission{Budgets: []store.BudgetCheck{tokenBudget(500, 50)}}, 10},
	} {
		var wg sync.WaitGroup
		errs := make([][]error, 2)
		for node, s := range []store.Store{a, b} {
			var batches []*store.Batch
			for i := range 15 {
				batches = append(batches, admissionBatch(2000+100*len(tc.tenant)+30*node+i, tc.tenant, tc.adm))
			}
			errs[node] = make([]error, len(batches))
			for i, batch := range batches {
				wg.Add(1)
				if err := s.Submit(&store.Request{Batch: batch, Done: func(err error) { errs[node][i] = err; wg.Done() }}); err != nil {
					t.Fatalf("Submit: %v", err)
				}
			}
		}
		wg.Wait()
		n, _ := admitted(t, append(errs[0], errs[1]...))
		if n != tc.want {
			t.Errorf("%s: 30 starts over two nodes admitted %d, want %d", tc.tenant, n, tc.want)
		}
	}
}
