package backend

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Erasing a conversation (DELETE /v1/conversations/{id}, an extension: docs/protocol.md
// "Deleting a conversation"). The store does the erasure itself, in one transaction that also
// refuses it while an execution of the conversation has not ended (store/erasure.go); the
// eraser (conversationeraser.go) cancels first when asked, has providers forget the
// conversation, and drops what the runtime keeps of it in memory — here before the commit, and
// on every node when the erasure's marker reaches that node's stream hub (forgetErased).

// cancelReasonDeleted is the cancel reason of executions cancelled so that their conversation
// can be deleted (DeleteConversation with cancelFirst).
const cancelReasonDeleted = "conversation deleted"

// maxEraseAttempts bounds the rounds of cancel-then-erase. With the seal a second round is
// rare (an execution whose cancel did not end it); past the bound the answer is
// CONVERSATION_BUSY, as without cancelFirst, and the conversation stays sealed until a DELETE
// is asked again.
const maxEraseAttempts = 5

// DeleteConversation erases conversation id of ctx's tenant with everything of it (its
// executions, events, artifacts, actions, standing rules, idempotency records, outbox rows,
// stream log entries, and what providers keep for it) and returns its tombstone. NOT_FOUND
// when unknown, another tenant's or already deleted. While an execution of it has not ended:
// CONVERSATION_BUSY naming them, unless cancelFirst, in which case each is cancelled (reason
// "conversation deleted") and the erasure waits for them to end — after the conversation was
// sealed against new starts (conversationseal.go), so a round finds none it did not cancel
// unless another node's start committed before the seal; up to maxEraseAttempts rounds.
func (e *conversationEraser) DeleteConversation(ctx context.Context, id string, cancelFirst bool) (api.ConversationDeletion, error) {
	if err := ctx.Err(); err != nil {
		return api.ConversationDeletion{}, err
	}
	if err := e.open(); err != nil {
		return api.ConversationDeletion{}, err
	}
	if _, err := e.conversations.lookup(ctx, id); err != nil {
		return api.ConversationDeletion{}, err
	}
	tenant := TenantFrom(ctx).ID
	if cancelFirst {
		// No start gets in from here on, on any node: the cancels below end what runs with
		// nothing new behind it (conversationseal.go).
		if err := e.sealForDeletion(tenant, id); err != nil {
			return api.ConversationDeletion{}, err
		}
	}
	var unfinished []string
	for range maxEraseAttempts {
		var err error
		if unfinished, err = unfinishedOf(e.store, tenant, id); err != nil {
			return api.ConversationDeletion{}, err
		}
		if len(unfinished) > 0 {
			if !cancelFirst {
				return api.ConversationDeletion{}, errConversationBusy(&store.BusyError{ConversationID: id, ExecutionIDs: unfinished})
			}
			if err := e.cancelForDeletion(ctx, unfinished); err != nil {
				return api.ConversationDeletion{}, err
			}
		}
		at := time.Now().UTC().Truncate(time.Millisecond)
		batch := &store.Batch{Erasures: []store.ConversationErasure{{Tenant: tenant, ConversationID: id, At: at}}}
		batch.ProviderStateDeletions = e.conversations.release(id)
		e.forgetInMemory(id)
		err = e.store.Commit(batch)
		switch {
		case err == nil:
			e.forgetInMemory(id) // what a read put back meanwhile
			return tombstoneOf(e.store, id, at)
		case errors.Is(err, store.ErrConversationBusy):
			continue // a start slipped in: cancel it too, or answer busy
		case errors.Is(err, store.ErrConversationGone):
			return api.ConversationDeletion{}, errConversationNotFound(id) // a concurrent delete won
		default:
			return api.ConversationDeletion{}, storeError("commit conversation erasure", err)
		}
	}
	// Name what runs now: the last round's were cancelled, and newer starts made it fail.
	unfinished, err := unfinishedOf(e.store, tenant, id)
	if err != nil {
		return api.ConversationDeletion{}, err
	}
	if len(unfinished) == 0 { // ended meanwhile: name none
		return api.ConversationDeletion{}, newError(CodeConversationBusy, "Conversation %s is busy: executions keep starting on it", id)
	}
	return api.ConversationDeletion{}, errConversationBusy(&store.BusyError{ConversationID: id, ExecutionIDs: unfinished})
}

// unfinishedOf lists the executions of conversation id that have not ended, oldest first (the
// order CONVERSATION_BUSY names them in), reading every page. Every state is read and the
// terminal ones skipped, rather than a list of the others that a new state could escape.
func unfinishedOf(st store.Store, tenant, id string) ([]string, error) {
	var ids []string
	q := store.ListQuery{ConversationID: id, Tenant: tenant, Limit: MaxListLimit}
	for {
		page, next, err := st.ListExecutions(q)
		if err != nil {
			return nil, internalError("list the conversation's executions", err)
		}
		for _, rec := range page {
			if !isTerminalState(rec.Execution.State) {
				ids = append(ids, rec.Execution.ID)
			}
		}
		if next == nil {
			break
		}
		q.After = next
	}
	for i, j := 0, len(ids)-1; i < j; i, j = i+1, j-1 { // the listing is newest first
		ids[i], ids[j] = ids[j], ids[i]
	}
	return ids, nil
}

// cancelForDeletion cancels each execution through its handle (here, or its owner through a
// command) and returns once each has ended. One that is gone or already terminal is fine. The
// cancels run at once, not one after another: each may wait up to cancel_timeout for its
// provider's cleanup, and the shorter a round, the less room a new start has to slip in before
// the erasure commits.
func (e *conversationEraser) cancelForDeletion(ctx context.Context, ids []string) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, xid := range ids {
		g.Go(func() error {
			reason := cancelReasonDeleted
			h, err := e.locate(gctx, xid)
			if ErrorCode(err) == CodeNotFound {
				return nil
			}
			if err != nil {
				return err
			}
			if _, err := h.Cancel(gctx, &reason); err != nil && ErrorCode(err) != CodeNotFound {
				return err
			}
			return nil
		})
	}
	return g.Wait()
}

// tombstoneOf reads the tombstone the erasure left (how many executions went with it).
func tombstoneOf(st store.Store, id string, at time.Time) (api.ConversationDeletion, error) {
	d := api.ConversationDeletion{ConversationID: id, DeletedAt: formatTimestamp(at)}
	er, ok := st.(store.ErasureReader)
	if !ok {
		return d, nil
	}
	t, found, err := er.Tombstone(id)
	if err != nil {
		return api.ConversationDeletion{}, internalError("read the conversation's tombstone", err)
	}
	if found {
		d.Executions = t.Executions
		d.DeletedAt = formatTimestamp(t.DeletedAt)
	}
	return d, nil
}

// release asks every provider that keeps conversation state to forget conversation id on this
// node (a warm process, a working directory) and returns the keys of its stored state, to be
// deleted with the conversation. Failures are logged: the erasure goes on.
func (d *conversationDesk) release(id string) []string {
	var keys []string
	for _, fg := range d.forgetters() {
		got, err := fg.forgetter.ForgetConversation(context.Background(), id)
		if err != nil {
			d.log.Error("forget a deleted conversation", "provider", fg.providerID, "conversation", id, "err", err)
		}
		for _, key := range got {
			keys = append(keys, providerStateKey(fg.providerID, key))
		}
	}
	return keys
}
