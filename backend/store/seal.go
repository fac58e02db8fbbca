package store

import "errors"

// Sealing a conversation is the first step of a delete that cancels what runs
// (DELETE /v1/conversations/{id}?cancel=true, docs/protocol.md §15.12). Without it the delete
// is exact but not live: each round cancels what runs, and a client starting turns back to
// back has a new execution in the conversation before the erasure commits, so the erasure is
// refused again and again. With it, the set of executions to cancel can only shrink:
//
//   - Batch.Seals lists conversations to seal (Tenant, ConversationID, At). A seal is
//     durable and lives in the store, so every node sees it at once. Sealing a conversation
//     that was erased, never created or is another tenant's fails the batch with
//     ErrConversationGone; sealing a sealed one is a no-op (a retried delete continues).
//   - From the seal's commit on, a batch that writes a NEW execution into the conversation
//     (one the store does not hold yet: a start) or puts its record (a rename) fails with an
//     error wrapping ErrConversationSealed, checked in the transaction that would write it,
//     under the same lock as the tombstone check (bbolt: the one writer; PostgreSQL: the
//     conversation row, which sealing locks FOR UPDATE — migration 00013). Everything else
//     goes on: the executions it holds still change state, write events, usage and actions,
//     so they can be cancelled and end; reads answer as before.
//   - The erasure removes the seal with the rest (the tombstone remains). Nothing else
//     removes it: a delete that failed or whose node died between seal and erasure leaves the
//     conversation sealed until a DELETE is asked again or the runtime's sweep of Sealed
//     finishes it once its executions have all ended.

// Sealer lists the sealed conversations; both stores implement it.
type Sealer interface {
	// Sealed lists every sealed conversation (not yet erased), oldest seal first.
	Sealed() ([]ConversationErasure, error)
}

// ErrConversationSealed fails a batch that starts an execution in, or renames, a
// conversation that is being deleted (sealed and not yet erased).
var ErrConversationSealed = errors.New("the conversation is being deleted")
