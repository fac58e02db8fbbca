package storetest

import (
	"errors"
	"sync"
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// SealRace seals conversations with sealer while starter commits a start into each, at the
// same moment, rounds times (one store, or two nodes of one database). What the delete relies
// on: the start either fails ErrConversationSealed, or it is committed by the time the seal's
// commit returns — read through sealer right then — so the delete's list of what to cancel,
// taken after the seal, has it. A start that passed the check and committed after the seal
// would be missed by the cancels and fail the erasure again.
func SealRace(t *testing.T, sealer, starter store.Store, rounds int) (startsFirst, sealsFirst int) {
	t.Helper()
	for round := range rounds {
		n := 3000 + round
		conv := conversationID(n)
		commit(t, sealer, &store.Batch{Conversations: []store.Conversation{{Tenant: erasureTenant, Conversation: api.Conversation{ID: conv, CreatedAt: createdAt(0)}}}})
		start := execution(n, n, api.ExecutionStateQueued, erasureTenant)
		var startErr, sealErr, readErr error
		var seenAtSeal bool
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			startErr = starter.Commit(&store.Batch{Executions: []store.Execution{start},
				Events: []store.StoredEvent{scoped(start.Execution.ID, 1, api.StandardEventTypeRunQueued, erasureTenant, conv, "mock")}})
		}()
		go func() {
			defer wg.Done()
			sealErr = sealer.Commit(&store.Batch{Seals: []store.ConversationErasure{{Tenant: erasureTenant, ConversationID: conv, At: base}}})
			if sealErr == nil {
				_, seenAtSeal, readErr = sealer.Execution(start.Execution.ID)
			}
		}()
		wg.Wait()
		if sealErr != nil || readErr != nil {
			t.Fatalf("round %d: seal %v, read %v", round, sealErr, readErr)
		}
		switch {
		case startErr == nil && seenAtSeal:
			startsFirst++
		case errors.Is(startErr, store.ErrConversationSealed):
			sealsFirst++
			if _, found, _ := starter.Execution(start.Execution.ID); found {
				t.Fatalf("round %d: the start was refused, but its execution is found", round)
			}
		case startErr == nil:
			t.Fatalf("round %d: the start committed after the seal returned without seeing it", round)
		default:
			t.Fatalf("round %d: start %v, want nil or ErrConversationSealed", round, startErr)
		}
	}
	return startsFirst, sealsFirst
}
