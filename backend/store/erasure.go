package store

import (
	"errors"
	"time"
)

// Erasing a conversation (DELETE /v1/conversations/{id}, docs/protocol.md "Conversations") is
// part of the store contract, so that both stores do all of it in one transaction and a
// concurrent start can never slip past it:
//
//   - Batch.Erasures lists the conversations to erase. For each, in the batch's transaction,
//     the store finds every execution of the conversation (of its tenant); if one has not
//     ended the whole batch fails with an error wrapping ErrConversationBusy and nothing is
//     applied. Otherwise it deletes the conversation's record, its executions with everything
//     that hangs off them (as Batch.Deletions does: events, artifacts, checkpoint, outbox
//     rows, action records and their indexes), every idempotency record of the conversation,
//     the standing rules scoped to it, its entries in the stream log and their indexes, and
//     the executions' usage rows — folding their usage into the tenant's erased totals first,
//     so that usage sums stay what they were (aggregates, no content). It writes a Tombstone
//     and appends one marker entry to the stream log (LogEntry.Erased) where the
//     conversation's entries were, so that a resuming reader meets the marker rather than a
//     silent gap. Provider state keys come from the runtime (Batch.ProviderStateDeletions).
//   - Once a conversation is erased, Conversation reports it not found and
//     ForEachConversation skips it, on every node; a batch that writes into an erased
//     conversation (its record, an execution, an event, usage, an idempotency record or a
//     rule) fails with an error wrapping ErrConversationGone, checked in the transaction that
//     would write it (bbolt: the one writer; PostgreSQL: row locks on the conversation's row,
//     taken as a foreign key's check would, so two nodes racing a start against an erasure
//     cannot both win). Erasing a conversation that was erased, never created, or is another
//     tenant's fails the same way. A start into a conversation that was never created is the
//     runtime's to refuse (the stores do not: older data and tests hold executions without a
//     conversation record).
//   - What the bytes leave behind (bbolt's free pages, PostgreSQL's dead tuples and WAL,
//     backups) is the operator's to finish: docs/operations.md, "Erasing a conversation".

// ConversationErasure asks for one conversation to be erased (Batch.Erasures).
type ConversationErasure struct {
	Tenant         string // the conversation's tenant ("" = anonymous)
	ConversationID string
	At             time.Time // the tombstone's time and the marker's
}

// Tombstone is what remains of an erased conversation: no content, only that it was, so that
// its id answers not found everywhere and is never used again.
type Tombstone struct {
	ConversationID string    `json:"conversationId"`
	Tenant         string    `json:"tenant,omitempty"`
	DeletedAt      time.Time `json:"deletedAt"`
	// Executions is how many executions were erased with it.
	Executions int `json:"executions"`
}

// ErasureReader reads tombstones; both stores implement it.
type ErasureReader interface {
	// Tombstone is the tombstone of conversationID when it was erased.
	Tombstone(conversationID string) (Tombstone, bool, error)
}

// ErrConversationBusy fails an erasure while one of the conversation's executions has not
// ended: the runtime cancels first when the caller asked it to, and answers 409 otherwise.
var ErrConversationBusy = errors.New("the conversation has an execution that has not ended")

// ErrConversationGone fails a batch that writes into a conversation that was erased or never
// existed (a start racing a delete).
var ErrConversationGone = errors.New("the conversation does not exist or was deleted")
