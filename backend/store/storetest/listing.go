package storetest

import (
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// ListExecutions pages newest first, per tenant and per conversation, filters by state, and a
// position continues exactly after the last record of its page (also once that record is gone).
func testListing(t *testing.T, open func(t *testing.T) store.Store) {
	s := openStore(t, open)
	b := &store.Batch{}
	var alice []string // alice's executions, newest first
	for i := 9; i >= 0; i-- {
		id := 60 + i
		state := api.ExecutionStateSucceeded
		if i%3 == 0 {
			state = api.ExecutionStateRunning
		}
		tenant := "alice"
		if i == 4 || i == 7 {
			tenant = "bob"
		}
		b.Executions = append(b.Executions, execution(id, 60+i%2, state, tenant))
		if tenant == "alice" {
			alice = append(alice, executionID(id))
		}
	}
	commit(t, s, b)

	ids := func(recs []store.Execution) []string {
		out := make([]string, len(recs))
		for i, r := range recs {
			out[i] = r.Execution.ID
		}
		return out
	}
	// Pages of 3 over alice's 8: 3, 3, 2, each continuing after the previous one.
	var got []string
	var after *store.ListPosition
	for page := 0; ; page++ {
		recs, next, err := s.ListExecutions(store.ListQuery{Limit: 3, Tenant: "alice", After: after})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ids(recs)...)
		if next == nil {
			if page != 2 || len(recs) != 2 {
				t.Fatalf("the last page is page %d with %d records, want page 2 with 2", page, len(recs))
			}
			break
		}
		if len(recs) != 3 || *next != store.PositionOf(recs[2].Execution) {
			t.Fatalf("page %d: %d records, next %+v; want 3 and the last one's position", page, len(recs), *next)
		}
		after = next
	}
	if len(got) != len(alice) {
		t.Fatalf("alice's pages: %v, want %v", got, alice)
	}
	for i := range alice {
		if got[i] != alice[i] {
			t.Fatalf("alice's pages: %v, want %v", got, alice)
		}
	}
	// A page that ends exactly at the last record says so (no empty extra page).
	if recs, next, _ := s.ListExecutions(store.ListQuery{Limit: 8, Tenant: "alice"}); len(recs) != 8 || next != nil {
		t.Fatalf("a limit of exactly 8: %d records, next %v", len(recs), next)
	}
	// Another tenant sees only its own; nobody's is the anonymous tenant's.
	if recs, _, _ := s.ListExecutions(store.ListQuery{Limit: 50, Tenant: "bob"}); len(recs) != 2 ||
		recs[0].Execution.ID != executionID(67) || recs[1].Execution.ID != executionID(64) {
		t.Fatalf("bob's listing: %v", ids(recs))
	}
	if recs, _, _ := s.ListExecutions(store.ListQuery{Limit: 50}); len(recs) != 0 {
		t.Fatalf("the anonymous tenant sees %v", ids(recs))
	}
	// One conversation (odd i: 69, 65, 63, 61 are alice's; 67 is bob's), and a state filter.
	recs, _, err := s.ListExecutions(store.ListQuery{Limit: 50, Tenant: "alice", ConversationID: conversationID(61)})
	if err != nil || len(recs) != 4 || recs[0].Execution.ID != executionID(69) || recs[3].Execution.ID != executionID(61) {
		t.Fatalf("alice's conversation: %v, %v", ids(recs), err)
	}
	recs, _, err = s.ListExecutions(store.ListQuery{Limit: 50, Tenant: "alice", States: map[api.ExecutionState]bool{api.ExecutionStateRunning: true}})
	if err != nil || len(recs) != 4 || recs[0].Execution.ID != executionID(69) || recs[1].Execution.ID != executionID(66) || recs[3].Execution.ID != executionID(60) {
		t.Fatalf("alice's running: %v, %v", ids(recs), err)
	}
	// A state change moves the record between filters.
	running := execution(69, 61, api.ExecutionStateSucceeded, "alice")
	commit(t, s, &store.Batch{Executions: []store.Execution{running}})
	recs, _, _ = s.ListExecutions(store.ListQuery{Limit: 50, Tenant: "alice", States: map[api.ExecutionState]bool{api.ExecutionStateRunning: true}})
	if len(recs) != 3 || recs[0].Execution.ID != executionID(66) {
		t.Fatalf("after 69 succeeded, alice's running: %v", ids(recs))
	}
	// A position whose record was deleted still continues after it.
	first, next, _ := s.ListExecutions(store.ListQuery{Limit: 2, Tenant: "alice"})
	commit(t, s, &store.Batch{Deletions: []store.Execution{first[1]}})
	rest, _, err := s.ListExecutions(store.ListQuery{Limit: 50, Tenant: "alice", After: next})
	if err != nil || len(rest) != 6 || rest[0].Execution.ID != alice[2] {
		t.Fatalf("after a deleted position: %v, %v; want %v", ids(rest), err, alice[2:])
	}
}
