package storetest

import (
	"errors"
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// An idempotency record is found only by its own (tenant, conversation, key); a second record
// for a taken key fails its batch with ErrConflict and applies nothing of it, while the
// batches committed beside it (Submit, same group) are applied.
func testIdempotency(t *testing.T, open func(t *testing.T) store.Store) {
	s := openStore(t, open)
	conv := conversationID(30)
	rec := store.Idempotency{Tenant: "alice", ConversationID: conv, Key: "k", Fingerprint: "f", ExecutionID: executionID(30)}
	commit(t, s, &store.Batch{Idempotency: []store.Idempotency{rec}})
	for _, tenant := range []string{"bob", ""} {
		if _, found, err := s.Idempotency(tenant, conv, "k"); err != nil || found {
			t.Fatalf("tenant %q found alice's record (%v)", tenant, err)
		}
	}
	if _, found, _ := s.Idempotency("alice", conversationID(31), "k"); found {
		t.Fatal("found under another conversation")
	}
	// The same key under other tenants is a different binding.
	bobs := rec
	bobs.Tenant, bobs.ExecutionID = "bob", executionID(31)
	anon := rec
	anon.Tenant, anon.ExecutionID = "", executionID(32)
	commit(t, s, &store.Batch{Idempotency: []store.Idempotency{bobs, anon}})
	for tenant, want := range map[string]string{"alice": executionID(30), "bob": executionID(31), "": executionID(32)} {
		got, found, err := s.Idempotency(tenant, conv, "k")
		if err != nil || !found || got.ExecutionID != want {
			t.Fatalf("tenant %q: %+v, found %v, %v", tenant, got, found, err)
		}
	}

	// A conflicting start: nothing of its batch is applied.
	loser := execution(33, 30, api.ExecutionStateQueued, "alice")
	dup := rec
	dup.ExecutionID, dup.Fingerprint = loser.Execution.ID, "f2"
	err := s.Commit(&store.Batch{
		Conversations: []store.Conversation{{Conversation: api.Conversation{ID: conversationID(33), CreatedAt: createdAt(0), Metadata: api.JSONObject{}}}},
		Executions:    []store.Execution{loser},
		Events:        []store.StoredEvent{event(loser.Execution.ID, 1, api.StandardEventTypeRunQueued)},
		Idempotency:   []store.Idempotency{dup},
	})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Commit of a taken key: %v, want ErrConflict", err)
	}
	if _, found, _ := s.Execution(loser.Execution.ID); found {
		t.Fatal("the conflicting batch's execution was applied")
	}
	if _, found, _ := s.Conversation(conversationID(33)); found {
		t.Fatal("the conflicting batch's conversation was applied")
	}
	if last, _ := s.LastSequence(loser.Execution.ID); last != 0 {
		t.Fatal("the conflicting batch's events were applied")
	}
	if got, _, _ := s.Idempotency("alice", conv, "k"); got != rec {
		t.Fatalf("the binding changed: %+v", got)
	}

	// Two starts racing for one new key through Submit: exactly one wins, and a neighbour
	// submitted with them is not failed by the loser.
	outcomes := make(chan error, 3)
	submit := func(b *store.Batch) {
		if err := s.Submit(&store.Request{Batch: b, Done: func(err error) { outcomes <- err }}); err != nil {
			t.Fatal(err)
		}
	}
	race := func(n int) *store.Batch {
		return &store.Batch{
			Executions:  []store.Execution{execution(n, 30, api.ExecutionStateQueued, "alice")},
			Idempotency: []store.Idempotency{{Tenant: "alice", ConversationID: conv, Key: "race", Fingerprint: "f", ExecutionID: executionID(n)}},
		}
	}
	submit(race(34))
	submit(race(35))
	submit(&store.Batch{Executions: []store.Execution{execution(36, 30, api.ExecutionStateQueued, "alice")}})
	var wins, conflicts int
	for range 3 {
		switch err := <-outcomes; {
		case err == nil:
			wins++
		case errors.Is(err, store.ErrConflict):
			conflicts++
		default:
			t.Fatalf("racing starts: %v", err)
		}
	}
	if wins != 2 || conflicts != 1 {
		t.Fatalf("racing starts: %d succeeded, %d conflicted; want 2 (a winner and the neighbour) and 1", wins, conflicts)
	}
	winner, found, _ := s.Idempotency("alice", conv, "race")
	if !found || winner.ExecutionID != executionID(34) {
		t.Fatalf("the key is bound to %+v, want the first submitted (%s)", winner, executionID(34))
	}
	if _, found, _ := s.Execution(executionID(35)); found {
		t.Fatal("the losing start's execution was applied")
	}
	if _, found, _ := s.Execution(executionID(36)); !found {
		t.Fatal("the neighbour of the losing start was not applied")
	}
}
