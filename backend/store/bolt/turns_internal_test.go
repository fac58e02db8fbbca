package bolt

import (
	"slices"
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// A turn in one group with an execution that is created before it and ends after it, in the
// same transaction, sees that execution as it was at the turn: queued. Writing only the last
// version of each record (latestExecutionRecords) would hide it; a group with a turn writes
// every version as it comes.
func TestTurnSeesTheGroupAsAppliedInOrder(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	req := func(b store.Batch) *store.Request { return &store.Request{Batch: &b} }
	turn := executionVersion("exec_t", api.ExecutionStateQueued)
	group := []*store.Request{
		req(store.Batch{Executions: []store.Execution{executionVersion("exec_a", api.ExecutionStateQueued)}}),
		req(store.Batch{Executions: []store.Execution{turn}, Turns: []store.Turn{{ConversationID: "conv_1", ExecutionID: "exec_t"}}}),
		req(store.Batch{Executions: []store.Execution{executionVersion("exec_a", api.ExecutionStateSucceeded)}}),
	}
	if latestExecutionRecords(group) != nil {
		t.Fatal("a group with a turn writes only the last version of a record")
	}
	if err := s.applyGroup(group); err != nil {
		t.Fatal(err)
	}
	if got := group[1].Batch.Turns[0].WaitingFor; !slices.Equal(got, []string{"exec_a"}) {
		t.Fatalf("the turn waits for %v, want [exec_a] (queued when it was applied)", got)
	}
	rec, _, err := s.Execution("exec_t")
	if err != nil || !slices.Equal(rec.Execution.WaitingFor, []string{"exec_a"}) {
		t.Fatalf("stored: %v, %v", rec.Execution.WaitingFor, err)
	}
}
