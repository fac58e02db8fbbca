package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Sealing a conversation ahead of its erasure (store.Batch.Seals, backend/store/seal.go).

// Seal is the seal's contract on one store.
func Seal(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("StartsRefusedRunningEnds", func(t *testing.T) {
		s := openStore(t, open)
		SealAcross(t, s, s)
	})
	t.Run("OnlyAnExistingConversation", func(t *testing.T) { testSealGone(t, openStore(t, open)) })
	t.Run("RacingStarts", func(t *testing.T) {
		s := openStore(t, open)
		SealRace(t, s, s, 40)
	})
}

// SealAcross seals a conversation with sealer while one of its executions runs, then starts,
// renames and ends that execution with starter (one store, or another node of its database):
// the start and the rename are refused, the running execution ends, reads still answer, and
// the erasure that follows removes the seal.
func SealAcross(t *testing.T, sealer, starter store.Store) {
	t.Helper()
	const n = 70
	conv := conversationID(n)
	record := store.Conversation{Tenant: erasureTenant, Conversation: api.Conversation{ID: conv, CreatedAt: createdAt(0)}}
	running := execution(n, n, api.ExecutionStateRunning, erasureTenant)
	commit(t, starter, &store.Batch{Conversations: []store.Conversation{record}, Executions: []store.Execution{running},
		Events: []store.StoredEvent{scoped(running.Execution.ID, 1, api.StandardEventTypeRunStarted, erasureTenant, conv, "mock")}})

	seal := store.ConversationErasure{Tenant: erasureTenant, ConversationID: conv, At: base.Add(5 * time.Second)}
	commit(t, sealer, &store.Batch{Seals: []store.ConversationErasure{seal}})
	commit(t, sealer, &store.Batch{Seals: []store.ConversationErasure{seal}}) // a retried delete seals again
	for _, s := range []store.Store{sealer, starter} {
		if got := sealed(t, s); len(got) != 1 || got[0].ConversationID != conv || got[0].Tenant != erasureTenant {
			t.Fatalf("Sealed = %+v, want the one conversation %s", got, conv)
		}
	}

	start := execution(n+1, n, api.ExecutionStateQueued, erasureTenant)
	err := starter.Commit(&store.Batch{Executions: []store.Execution{start},
		Events: []store.StoredEvent{scoped(start.Execution.ID, 1, api.StandardEventTypeRunQueued, erasureTenant, conv, "mock")}})
	if !errors.Is(err, store.ErrConversationSealed) {
		t.Fatalf("a start into a sealed conversation: %v, want ErrConversationSealed", err)
	}
	renamed := record
	renamed.Metadata = api.JSONObject{"title": "renamed"}
	if err := starter.Commit(&store.Batch{Conversations: []store.Conversation{renamed}}); !errors.Is(err, store.ErrConversationSealed) {
		t.Fatalf("a rename of a sealed conversation: %v, want ErrConversationSealed", err)
	}
	if _, found, _ := starter.Execution(start.Execution.ID); found {
		t.Fatal("the refused start's execution is stored")
	}
	if _, found, err := starter.Conversation(conv); !found || err != nil {
		t.Fatalf("a sealed conversation is not read (found %v, %v)", found, err)
	}

	ended := execution(n, n, api.ExecutionStateCancelled, erasureTenant)
	commit(t, starter, &store.Batch{Executions: []store.Execution{ended},
		Events: []store.StoredEvent{scoped(ended.Execution.ID, 2, api.StandardEventTypeRunCancelled, erasureTenant, conv, "mock")}})

	commit(t, sealer, &store.Batch{Erasures: []store.ConversationErasure{{Tenant: erasureTenant, ConversationID: conv, At: base.Add(6 * time.Second)}}})
	for _, s := range []store.Store{sealer, starter} {
		if got := sealed(t, s); len(got) != 0 {
			t.Fatalf("Sealed after the erasure = %+v, want none", got)
		}
	}
	err = starter.Commit(&store.Batch{Executions: []store.Execution{start}})
	if !errors.Is(err, store.ErrConversationGone) {
		t.Fatalf("a start into the erased conversation: %v, want ErrConversationGone", err)
	}
}

// testSealGone: a conversation that was never created, is another tenant's or was erased
// cannot be sealed, and nothing is sealed by the attempt.
func testSealGone(t *testing.T, s store.Store) {
	f := writeErasureFixture(t, s)
	commit(t, s, f.erasure(base))
	for name, e := range map[string]store.ConversationErasure{
		"an unknown one":   {Tenant: erasureTenant, ConversationID: conversationID(99), At: base},
		"another tenant's": {Tenant: "intruder", ConversationID: f.neighbour, At: base},
		"an erased one":    {Tenant: erasureTenant, ConversationID: f.conv, At: base},
	} {
		if err := s.Commit(&store.Batch{Seals: []store.ConversationErasure{e}}); !errors.Is(err, store.ErrConversationGone) {
			t.Errorf("sealing %s: %v, want ErrConversationGone", name, err)
		}
	}
	if got := sealed(t, s); len(got) != 0 {
		t.Fatalf("Sealed = %+v, want none", got)
	}
}

func sealed(t *testing.T, s store.Store) []store.ConversationErasure {
	t.Helper()
	sl, ok := s.(store.Sealer)
	if !ok {
		t.Fatalf("%T does not list its seals (store.Sealer)", s)
	}
	got, err := sl.Sealed()
	if err != nil {
		t.Fatal(err)
	}
	return got
}
