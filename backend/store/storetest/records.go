package storetest

import (
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Every record kind comes back as it was committed; absent ones are (zero, false, nil); a put
// replaces.
func testRecords(t *testing.T, open func(t *testing.T) store.Store) {
	s := openStore(t, open)
	conv := store.Conversation{Conversation: api.Conversation{ID: conversationID(1), CreatedAt: createdAt(0),
		Metadata: api.JSONObject{"title": "t", "n": 1.5}}, Tenant: "alice"}
	key := "key-1"
	desc := "why"
	rec := execution(1, 1, api.ExecutionStateAwaitingApproval, "alice")
	rec.IdempotencyKey = &key
	rec.ActionIDs = []string{actionID(1)}
	rec.PendingActionID = actionID(1)
	rec.Owner = "node-a"
	action := store.Action{Request: api.ActionRequest{ID: actionID(1), ExecutionID: rec.Execution.ID, Kind: api.ActionKindApproval,
		Title: "Approve?", Description: &desc, Payload: api.JSONObject{"x": "y"}, CreatedAt: createdAt(1)}, Status: store.ActionPending}
	idem := store.Idempotency{ConversationID: conv.ID, Key: key, Fingerprint: "fp", ExecutionID: rec.Execution.ID, Tenant: "alice"}
	commit(t, s, &store.Batch{
		Conversations: []store.Conversation{conv},
		Executions:    []store.Execution{rec},
		Events:        []store.StoredEvent{event(rec.Execution.ID, 1, api.StandardEventTypeRunQueued)},
		Actions:       []store.Action{action},
		Idempotency:   []store.Idempotency{idem},
		Checkpoints:   []store.Checkpoint{{ExecutionID: rec.Execution.ID, Data: []byte("cp-1")}},
		ProviderState: []store.ProviderState{{Key: "mock\x00k", Value: []byte{0, 1, 2}}},
	})

	gotConv, found, err := s.Conversation(conv.ID)
	if err != nil || !found {
		t.Fatalf("Conversation: found %v, %v", found, err)
	}
	sameJSON(t, "conversation", gotConv, conv)
	if gotConv.Tenant != "alice" {
		t.Fatalf("conversation tenant %q", gotConv.Tenant)
	}
	gotRec, found, err := s.Execution(rec.Execution.ID)
	if err != nil || !found {
		t.Fatalf("Execution: found %v, %v", found, err)
	}
	sameJSON(t, "execution", gotRec, rec)
	if gotRec.Owner != "node-a" || gotRec.Tenant != "alice" || gotRec.PendingActionID != actionID(1) {
		t.Fatalf("execution fields lost: %+v", gotRec)
	}
	gotAction, found, err := s.Action(actionID(1))
	if err != nil || !found {
		t.Fatalf("Action: found %v, %v", found, err)
	}
	sameJSON(t, "action", gotAction, action)
	gotIdem, found, err := s.Idempotency("alice", conv.ID, key)
	if err != nil || !found || gotIdem != idem {
		t.Fatalf("Idempotency: %+v, found %v, %v", gotIdem, found, err)
	}
	cp, found, err := s.Checkpoint(rec.Execution.ID)
	if err != nil || !found || string(cp) != "cp-1" {
		t.Fatalf("Checkpoint: %q, found %v, %v", cp, found, err)
	}
	v, found, err := s.ProviderState("mock\x00k")
	if err != nil || !found || string(v) != "\x00\x01\x02" {
		t.Fatalf("ProviderState: %q, found %v, %v", v, found, err)
	}

	// Puts replace.
	rec.Execution.State = api.ExecutionStateRunning
	rec.PendingActionID = ""
	action.Status = store.ActionResolved
	commit(t, s, &store.Batch{
		Executions:    []store.Execution{rec},
		Actions:       []store.Action{action},
		Checkpoints:   []store.Checkpoint{{ExecutionID: rec.Execution.ID, Data: []byte("cp-2")}},
		ProviderState: []store.ProviderState{{Key: "mock\x00k", Value: []byte("v2")}},
	})
	if got, _, _ := s.Execution(rec.Execution.ID); got.Execution.State != api.ExecutionStateRunning || got.PendingActionID != "" {
		t.Fatalf("execution not replaced: %+v", got)
	}
	if got, _, _ := s.Action(actionID(1)); got.Status != store.ActionResolved {
		t.Fatalf("action not replaced: %+v", got)
	}
	if cp, _, _ := s.Checkpoint(rec.Execution.ID); string(cp) != "cp-2" {
		t.Fatalf("checkpoint not replaced: %q", cp)
	}
	if v, _, _ := s.ProviderState("mock\x00k"); string(v) != "v2" {
		t.Fatalf("provider state not replaced: %q", v)
	}

	// Deletions remove the keys named (after the batch's own puts); others stay, and an absent
	// key is no error.
	commit(t, s, &store.Batch{ProviderState: []store.ProviderState{{Key: "mock\x00kept", Value: []byte("k")}}})
	commit(t, s, &store.Batch{
		ProviderState:          []store.ProviderState{{Key: "mock\x00gone-too", Value: []byte("g")}},
		ProviderStateDeletions: []string{"mock\x00k", "mock\x00gone-too", "mock\x00never-was"},
	})
	for key, want := range map[string]bool{"mock\x00k": false, "mock\x00gone-too": false, "mock\x00kept": true} {
		if _, found, err := s.ProviderState(key); found != want || err != nil {
			t.Errorf("after deletions, ProviderState(%q): found %v, %v; want found %v", key, found, err, want)
		}
	}

	// Absent records.
	for name, read := range map[string]func() (bool, error){
		"conversation": func() (bool, error) { _, f, err := s.Conversation(conversationID(9)); return f, err },
		"execution":    func() (bool, error) { _, f, err := s.Execution(executionID(9)); return f, err },
		"action":       func() (bool, error) { _, f, err := s.Action(actionID(9)); return f, err },
		"idempotency":  func() (bool, error) { _, f, err := s.Idempotency("alice", conv.ID, "other"); return f, err },
		"checkpoint":   func() (bool, error) { _, f, err := s.Checkpoint(executionID(9)); return f, err },
		"state":        func() (bool, error) { _, f, err := s.ProviderState("mock\x00other"); return f, err },
	} {
		if found, err := read(); found || err != nil {
			t.Errorf("absent %s: found %v, %v", name, found, err)
		}
	}
	// An empty commit succeeds and changes nothing.
	if err := s.Commit(&store.Batch{}); err != nil {
		t.Fatalf("empty Commit: %v", err)
	}
}
