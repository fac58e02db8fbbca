package storetest

import (
	"errors"
	"sync"
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// ErasureRace erases conversations with eraser while starter commits a start into each, at
// the same moment, rounds times. eraser and starter may be one store or two nodes of one
// database. Each round must end one of two ways, never both and never neither: the start
// won (the erasure failed busy, the execution and conversation are there) or the erasure won
// (the start failed ErrConversationGone and nothing of the execution is found on either).
// Stores add their own look below the API (the PostgreSQL test queries the tables).
func ErasureRace(t *testing.T, eraser, starter store.Store, rounds int) (startsWon, erasuresWon int) {
	t.Helper()
	for round := range rounds {
		convN, execN := 1000+round, 1000+round
		conv := conversationID(convN)
		prior := execution(execN+5000, convN, api.ExecutionStateSucceeded, erasureTenant)
		commit(t, eraser, &store.Batch{
			Conversations: []store.Conversation{{Tenant: erasureTenant, Conversation: api.Conversation{ID: conv, CreatedAt: createdAt(0)}}},
			Executions:    []store.Execution{prior},
			Events:        []store.StoredEvent{scoped(prior.Execution.ID, 1, api.StandardEventTypeRunCompleted, erasureTenant, conv, "mock")},
		})
		start := execution(execN, convN, api.ExecutionStateQueued, erasureTenant)
		var startErr, eraseErr error
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			startErr = starter.Commit(&store.Batch{Executions: []store.Execution{start},
				Events: []store.StoredEvent{scoped(start.Execution.ID, 1, api.StandardEventTypeRunQueued, erasureTenant, conv, "mock")}})
		}()
		go func() {
			defer wg.Done()
			eraseErr = eraser.Commit(&store.Batch{Erasures: []store.ConversationErasure{{Tenant: erasureTenant, ConversationID: conv, At: base}}})
		}()
		wg.Wait()
		switch {
		case startErr == nil && errors.Is(eraseErr, store.ErrConversationBusy):
			startsWon++
			for _, s := range []store.Store{eraser, starter} {
				if _, found, err := s.Execution(start.Execution.ID); !found || err != nil {
					t.Fatalf("round %d: the start won, but its execution is not found (%v)", round, err)
				}
				if _, found, _ := s.Conversation(conv); !found {
					t.Fatalf("round %d: the start won, but its conversation is not found", round)
				}
			}
		case eraseErr == nil && errors.Is(startErr, store.ErrConversationGone):
			erasuresWon++
			for _, s := range []store.Store{eraser, starter} {
				for _, id := range []string{start.Execution.ID, prior.Execution.ID} {
					if _, found, err := s.Execution(id); found || err != nil {
						t.Fatalf("round %d: the erasure won, but execution %s is found (%v)", round, id, err)
					}
					if got, _ := s.Events(id, 0, 0); len(got) != 0 {
						t.Fatalf("round %d: the erasure won, but %s has %d events", round, id, len(got))
					}
				}
			}
		default:
			t.Fatalf("round %d: start %v, erasure %v: want exactly one of them to fail (busy or gone)", round, startErr, eraseErr)
		}
	}
	t.Logf("%d rounds: the start won %d, the erasure %d", rounds, startsWon, erasuresWon)
	return startsWon, erasuresWon
}
