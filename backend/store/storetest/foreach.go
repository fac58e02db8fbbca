package storetest

import (
	"sort"
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// ForEachExecution visits every execution once and stops when visit returns false.
func testForEachExecution(t *testing.T, open func(t *testing.T) store.Store) {
	s := openStore(t, open)
	undecodable := func(id string, err error) { t.Errorf("undecodable %s: %v", id, err) }
	visits := 0
	if err := s.ForEachExecution(func(store.Execution) bool { visits++; return true }, undecodable); err != nil || visits != 0 {
		t.Fatalf("empty store: %d visits, %v", visits, err)
	}
	want := map[string]api.ExecutionState{}
	b := &store.Batch{}
	for i := range 7 {
		state := api.ExecutionStateRunning
		if i%2 == 0 {
			state = api.ExecutionStateSucceeded
		}
		rec := execution(40+i, 40, state, "")
		b.Executions = append(b.Executions, rec)
		want[rec.Execution.ID] = state
	}
	commit(t, s, b)
	var seen []string
	err := s.ForEachExecution(func(rec store.Execution) bool {
		if want[rec.Execution.ID] != rec.Execution.State {
			t.Errorf("visited %s in state %s", rec.Execution.ID, rec.Execution.State)
		}
		seen = append(seen, rec.Execution.ID)
		return true
	}, undecodable)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(seen)
	if len(seen) != 7 || seen[0] != executionID(40) || seen[6] != executionID(46) || len(map[string]bool{seen[0]: true, seen[1]: true, seen[2]: true, seen[3]: true, seen[4]: true, seen[5]: true, seen[6]: true}) != 7 {
		t.Fatalf("visited %v", seen)
	}
	visits = 0
	if err := s.ForEachExecution(func(store.Execution) bool { visits++; return visits < 3 }, undecodable); err != nil || visits != 3 {
		t.Fatalf("a walk told to stop at the third record made %d visits (%v)", visits, err)
	}
}
