package storetest

import (
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Deleting an execution (retention) removes it with everything hanging off it — events,
// artifacts, checkpoint, actions, its listing entry, its idempotency binding — and nothing of
// its neighbours; a binding that points at another execution stays.
func testDeletions(t *testing.T, open func(t *testing.T) store.Store) {
	s := openStore(t, open)
	conv := conversationID(50)
	keyA, keyC := "ka", "kc"
	a := execution(50, 50, api.ExecutionStateSucceeded, "")
	a.IdempotencyKey, a.ActionIDs = &keyA, []string{actionID(50), actionID(51)}
	b := execution(51, 50, api.ExecutionStateSucceeded, "")
	b.ActionIDs = []string{actionID(52)}
	// c carries key kc, but the binding of kc points at b (c lost a race, say): deleting c
	// must not delete b's binding.
	c := execution(52, 50, api.ExecutionStateFailed, "")
	c.IdempotencyKey = &keyC
	action := func(id string, exec store.Execution) store.Action {
		return store.Action{Request: api.ActionRequest{ID: id, ExecutionID: exec.Execution.ID, Kind: api.ActionKindInput,
			Title: "t", Payload: api.JSONObject{}, CreatedAt: createdAt(0)}, Status: store.ActionResolved}
	}
	artifact := func(exec store.Execution) store.Artifact {
		return store.Artifact{Index: 0, Artifact: api.Artifact{ID: "art_" + exec.Execution.ID, ExecutionID: exec.Execution.ID,
			Name: "a", MediaType: "text/plain", Metadata: api.JSONObject{}, CreatedAt: createdAt(0)}}
	}
	commit(t, s, &store.Batch{
		Executions: []store.Execution{a, b, c},
		Events:     append(append(deltas(a.Execution.ID, 1, 4), deltas(b.Execution.ID, 1, 2)...), deltas(c.Execution.ID, 1, 1)...),
		Artifacts:  []store.Artifact{artifact(a), artifact(b)},
		Actions:    []store.Action{action(actionID(50), a), action(actionID(51), a), action(actionID(52), b)},
		Idempotency: []store.Idempotency{
			{ConversationID: conv, Key: keyA, Fingerprint: "f", ExecutionID: a.Execution.ID},
			{ConversationID: conv, Key: keyC, Fingerprint: "f", ExecutionID: b.Execution.ID},
		},
		Checkpoints: []store.Checkpoint{{ExecutionID: a.Execution.ID, Data: []byte("a")}, {ExecutionID: b.Execution.ID, Data: []byte("b")}},
	})
	commit(t, s, &store.Batch{Deletions: []store.Execution{a, c}})

	for _, id := range []string{a.Execution.ID, c.Execution.ID} {
		if _, found, err := s.Execution(id); found || err != nil {
			t.Errorf("%s: record still there (%v)", id, err)
		}
		if last, err := s.LastSequence(id); last != 0 || err != nil {
			t.Errorf("%s: events still there (last %d, %v)", id, last, err)
		}
		if got, err := s.Events(id, 0, 0); len(got) != 0 || err != nil {
			t.Errorf("%s: %d events still there (%v)", id, len(got), err)
		}
		if got, err := s.Artifacts(id); len(got) != 0 || err != nil {
			t.Errorf("%s: %d artifacts still there (%v)", id, len(got), err)
		}
		if _, found, err := s.Checkpoint(id); found || err != nil {
			t.Errorf("%s: checkpoint still there (%v)", id, err)
		}
	}
	for _, id := range []string{actionID(50), actionID(51)} {
		if _, found, err := s.Action(id); found || err != nil {
			t.Errorf("action %s still there (%v)", id, err)
		}
	}
	if _, found, _ := s.Idempotency("", conv, keyA); found {
		t.Error("the deleted execution's idempotency binding is still there")
	}
	// The neighbour is whole, including the binding the deleted c carried the key of.
	if _, found, _ := s.Execution(b.Execution.ID); !found {
		t.Error("the neighbour's record was deleted")
	}
	if last, _ := s.LastSequence(b.Execution.ID); last != 2 {
		t.Errorf("the neighbour's events: last %d, want 2", last)
	}
	if got, _ := s.Artifacts(b.Execution.ID); len(got) != 1 {
		t.Errorf("the neighbour's artifacts: %d, want 1", len(got))
	}
	if _, found, _ := s.Action(actionID(52)); !found {
		t.Error("the neighbour's action was deleted")
	}
	if _, found, _ := s.Checkpoint(b.Execution.ID); !found {
		t.Error("the neighbour's checkpoint was deleted")
	}
	if got, found, _ := s.Idempotency("", conv, keyC); !found || got.ExecutionID != b.Execution.ID {
		t.Errorf("another execution's binding was deleted with c: %+v, found %v", got, found)
	}
	page, _, err := s.ListExecutions(store.ListQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 1 || page[0].Execution.ID != b.Execution.ID {
		t.Errorf("listing after the deletion: %d records, want only the neighbour", len(page))
	}
}
