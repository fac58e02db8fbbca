package storetest

import (
	"slices"
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/usage"
)

// Usage rows: a put replaces the execution's row (never adds to it), a tenant's range is
// [from, to) by creation time and holds no other tenant's rows (not even one whose name starts
// with the tenant's), a damaged or retried put counts nothing twice, and rows outlive the
// executions retention deletes.
func testUsage(t *testing.T, open func(t *testing.T) store.Store) {
	s := openStore(t, open)
	row := func(n int, tenant string, ms int64, tokens int64) store.ExecutionUsage {
		return store.ExecutionUsage{
			ExecutionID: executionID(n), Tenant: tenant, ConversationID: conversationID(n % 2),
			ProviderID: "mock", CreatedMs: ms,
			Usage: usage.Usage{InputTokens: tokens, TotalTokens: tokens, Cost: usage.Money{Micros: tokens * 10, Currency: "EUR"}},
		}
	}
	sum := func(q store.UsageQuery) (ids []string, tokens int64) {
		t.Helper()
		err := s.ForEachUsage(q, func(r store.ExecutionUsage) bool {
			if r.Tenant != q.Tenant || r.CreatedMs < q.FromMs || r.CreatedMs >= q.ToMs {
				t.Errorf("row %+v is outside %+v", r, q)
			}
			ids = append(ids, r.ExecutionID)
			tokens += r.Usage.TotalTokens
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(ids)
		return ids, tokens
	}
	if ids, _ := sum(store.UsageQuery{Tenant: "a", FromMs: 0, ToMs: 1 << 50}); len(ids) != 0 {
		t.Fatalf("empty store has rows %v", ids)
	}
	commit(t, s, &store.Batch{Usage: []store.ExecutionUsage{
		row(1, "a", 1000, 5), row(2, "a", 2000, 7), row(3, "ab", 1500, 100), row(4, "", 1500, 1000), row(5, "a", 3000, 11),
	}})
	// The same executions again, grown: replaced, not added.
	commit(t, s, &store.Batch{Usage: []store.ExecutionUsage{row(1, "a", 1000, 6), row(2, "a", 2000, 7)}})
	// A stale value (a lower cumulative count) never lowers a row on any store that orders
	// writes itself; the runtime never sends one (it refuses reports that go down).
	for _, c := range []struct {
		q          store.UsageQuery
		ids        []string
		wantTokens int64
	}{
		{store.UsageQuery{Tenant: "a", FromMs: 0, ToMs: 1 << 50}, []string{executionID(1), executionID(2), executionID(5)}, 6 + 7 + 11},
		{store.UsageQuery{Tenant: "a", FromMs: 1000, ToMs: 3000}, []string{executionID(1), executionID(2)}, 13},
		{store.UsageQuery{Tenant: "a", FromMs: 1001, ToMs: 3001}, []string{executionID(2), executionID(5)}, 18},
		{store.UsageQuery{Tenant: "ab", FromMs: 0, ToMs: 1 << 50}, []string{executionID(3)}, 100},
		{store.UsageQuery{Tenant: "", FromMs: 0, ToMs: 1 << 50}, []string{executionID(4)}, 1000},
		{store.UsageQuery{Tenant: "b", FromMs: 0, ToMs: 1 << 50}, nil, 0},
	} {
		ids, tokens := sum(c.q)
		if !slices.Equal(ids, c.ids) || tokens != c.wantTokens {
			t.Errorf("%+v: rows %v, %d tokens; want %v, %d", c.q, ids, tokens, c.ids, c.wantTokens)
		}
	}
	// A row's fields round-trip.
	var got store.ExecutionUsage
	_ = s.ForEachUsage(store.UsageQuery{Tenant: "ab", FromMs: 0, ToMs: 1 << 50}, func(r store.ExecutionUsage) bool { got = r; return false })
	if want := row(3, "ab", 1500, 100); got != want {
		t.Errorf("row = %+v, want %+v", got, want)
	}
	// Deleting the execution (retention) keeps what it spent.
	rec := execution(5, 1, "succeeded", "a")
	commit(t, s, &store.Batch{Executions: []store.Execution{rec}})
	commit(t, s, &store.Batch{Deletions: []store.Execution{rec}})
	if _, tokens := sum(store.UsageQuery{Tenant: "a", FromMs: 0, ToMs: 1 << 50}); tokens != 24 {
		t.Errorf("after deleting an execution: %d tokens, want 24 (rows outlive executions)", tokens)
	}
}
