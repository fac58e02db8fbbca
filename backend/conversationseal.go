package backend

import (
	"errors"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Sealing a conversation before a delete cancels what runs in it (store/seal.go): without the
// seal, a client starting turns back to back had a new execution in the conversation before
// each round's erasure committed, and could hold the delete off for as long as it kept on.
// The seal is in the store, so every node refuses starts into the conversation from its
// commit on; the executions already there are cancelled and end, and the erasure removes the
// seal with the rest. Reads still answer until the erasure; starts and renames are refused
// with CONVERSATION_BUSY, "being deleted".

// errConversationSealed answers a start into, or a rename of, a conversation being deleted.
// CONVERSATION_BUSY rather than NOT_FOUND: the conversation still reads, and a moment later
// the answer is NOT_FOUND.
func errConversationSealed(id string, cause error) *Error {
	e := newError(CodeConversationBusy, "Conversation %s is being deleted", id)
	// ConversationBusyDetails with deleting (harness.yaml); no execution names: the start did
	// not wait for any, and a moment later the conversation answers NOT_FOUND.
	e.Details = api.JSONObject{"conversationId": id, "executionIds": []any{}, "deleting": true}
	e.cause = cause
	return e
}

// sealForDeletion commits the seal of conversation id of tenant; a conversation sealed
// already (a delete asked again after one that failed or whose node died) stays sealed.
func (e *conversationEraser) sealForDeletion(tenant, id string) error {
	at := time.Now().UTC().Truncate(time.Millisecond)
	err := e.store.Commit(&store.Batch{Seals: []store.ConversationErasure{{Tenant: tenant, ConversationID: id, At: at}}})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrConversationGone):
		return errConversationNotFound(id) // a concurrent delete won
	default:
		return storeError("commit conversation seal", err)
	}
}

// sealGrace is how old a seal must be before finishSealed takes over its delete: longer than
// a delete that is still under way can take (its rounds of cancels, each bounded by
// cancel_timeout), so that the delete answers with its own tombstone rather than meeting an
// erasure finished under it (NOT_FOUND).
func (e *conversationEraser) sealGrace() time.Duration {
	return maxEraseAttempts*e.cancelTimeout + time.Minute
}

// finishSealed erases every sealed conversation whose executions have all ended and whose seal
// is older than sealGrace: the deletes whose node died (or whose caller went away) between
// the seal and the erasure. One with an
// execution still running stays sealed (its owner, or the node that recovers it, ends it; a
// DELETE asked again cancels it). Run once when the runtime opens and by each retention sweep.
// Returns how many it erased.
func (e *conversationEraser) finishSealed() (int, error) {
	sl, ok := e.store.(store.Sealer)
	if !ok {
		return 0, nil
	}
	seals, err := sl.Sealed()
	if err != nil {
		return 0, err
	}
	erased := 0
	for _, s := range seals {
		if time.Since(s.At) < e.sealGrace() {
			continue // its delete may still be under way
		}
		unfinished, err := unfinishedOf(e.store, s.Tenant, s.ConversationID)
		if err != nil {
			return erased, err
		}
		if len(unfinished) > 0 {
			continue
		}
		at := time.Now().UTC().Truncate(time.Millisecond)
		batch := &store.Batch{Erasures: []store.ConversationErasure{{Tenant: s.Tenant, ConversationID: s.ConversationID, At: at}}}
		batch.ProviderStateDeletions = e.conversations.release(s.ConversationID)
		e.forgetInMemory(s.ConversationID)
		err = e.store.Commit(batch)
		switch {
		case err == nil:
			erased++
			e.log.Info("finished the deletion of a sealed conversation", "conversation", s.ConversationID)
		case errors.Is(err, store.ErrConversationBusy), errors.Is(err, store.ErrConversationGone):
			// started running meanwhile / erased by a delete meanwhile
		default:
			return erased, err
		}
	}
	return erased, nil
}
