package bolt

import (
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

func executionVersion(id string, state api.ExecutionState) store.Execution {
	return store.Execution{Execution: api.Execution{
		ID: id, ConversationID: "conv_1", ProviderID: "mock", State: state,
		Input: "x", RequiredCapabilities: []string{}, EffectiveConfig: api.JSONObject{},
		CreatedAt: "2026-11-30T19:00:00.000Z", UpdatedAt: "2026-11-30T19:00:00.000Z",
	}}
}

// One group that writes an execution's record three times (queued, running, succeeded, in three
// requests, as a short execution's changes share a commit) leaves exactly what three commits
// leave: the last record, and index entries that list it under its last state only. Only the
// last version is written (latestExecutionRecords); a record deleted and written again in the
// same group ends written.
func TestGroupWritesTheLastVersionOfEachRecord(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	req := func(b store.Batch) *store.Request { return &store.Request{Batch: &b} }
	a, b := "exec_a", "exec_b"
	group := []*store.Request{
		req(store.Batch{Executions: []store.Execution{executionVersion(a, api.ExecutionStateQueued), executionVersion(b, api.ExecutionStateSucceeded)}}),
		req(store.Batch{Executions: []store.Execution{executionVersion(a, api.ExecutionStateRunning)}}),
		req(store.Batch{Deletions: []store.Execution{executionVersion(b, api.ExecutionStateSucceeded)}}),
		req(store.Batch{Executions: []store.Execution{executionVersion(a, api.ExecutionStateSucceeded), executionVersion(b, api.ExecutionStateFailed)}}),
	}
	latest := latestExecutionRecords(group)
	if latest == nil || !latest.superseded(&group[0].Batch.Executions[0]) || !latest.superseded(&group[1].Batch.Executions[0]) ||
		latest.superseded(&group[3].Batch.Executions[0]) || latest.superseded(&group[3].Batch.Executions[1]) {
		t.Fatalf("latest versions: %v", latest)
	}
	if err := s.applyGroup(group); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]api.ExecutionState{a: api.ExecutionStateSucceeded, b: api.ExecutionStateFailed} {
		rec, found, err := s.Execution(id)
		if err != nil || !found || rec.Execution.State != want {
			t.Fatalf("%s: %+v found %v, %v; want state %s", id, rec.Execution, found, err, want)
		}
	}
	for _, state := range []api.ExecutionState{api.ExecutionStateQueued, api.ExecutionStateRunning, api.ExecutionStateSucceeded, api.ExecutionStateFailed} {
		for _, conv := range []string{"", "conv_1"} {
			recs, _, err := s.ListExecutions(store.ListQuery{ConversationID: conv, States: map[api.ExecutionState]bool{state: true}, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			want := map[api.ExecutionState]int{api.ExecutionStateSucceeded: 1, api.ExecutionStateFailed: 1}[state]
			if len(recs) != want {
				t.Errorf("listing %q in state %s: %d executions, want %d", conv, state, len(recs), want)
			}
		}
	}
	// A group that writes each record once needs no map.
	if latestExecutionRecords(group[3:]) != nil {
		t.Error("a group without superseded versions got a map of latest versions")
	}
}
