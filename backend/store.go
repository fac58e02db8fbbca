package backend

import (
	"io"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// store is everything the runtime needs from durable storage, and nothing more: a second
// implementation (PostgreSQL rows plus LISTEN/NOTIFY, say) must be possible without touching the
// runtime. The runtime keeps live state in memory and treats the store as the record of truth:
// a change becomes observable only after Commit returned nil.
type store interface {
	// Commit applies the batch atomically and durably. Concurrent calls may share one physical
	// commit (group commit); each call returns only once its own changes are on disk.
	Commit(b *storeBatch) error
	// Submit queues a batch for the next group commit and returns without waiting for it
	// (unless the queue is full); req.done reports the outcome, in submission order.
	Submit(req *commitRequest) error

	Conversation(id string) (conversationRecord, bool, error)
	Execution(id string) (executionRecord, bool, error)
	// Events returns events with sequence > after in order, at most limit (limit <= 0: all).
	Events(executionID string, after int64, limit int) ([]Event, error)
	// LastSequence is the sequence of the execution's last event (0 when none).
	LastSequence(executionID string) (int64, error)
	Artifacts(executionID string) ([]api.Artifact, error)
	Action(id string) (actionRecord, bool, error)
	Idempotency(tenant, conversationID, key string) (idempotencyRecord, bool, error)
	// Checkpoint is the provider checkpoint last committed for the execution (resume.go).
	Checkpoint(executionID string) ([]byte, bool, error)
	// ProviderState is a provider's durable value under key (checkpoint.go).
	ProviderState(key string) ([]byte, bool, error)
	// ForEachExecution visits every execution record (recovery and retention sweeps); returning
	// false stops the walk. A record that cannot be decoded is handed to undecodable with its id
	// and the walk goes on: one damaged record must not stop recovery, retention or a restart.
	ForEachExecution(visit func(executionRecord) bool, undecodable func(id string, err error)) error
	executionLister // the listing extension (store_listing.go)
	outboxStore     // the webhook outbox (outbox.go)

	// Backup writes a consistent copy of the whole store, as one file that Open accepts, while
	// writes go on; it returns the bytes written.
	Backup(w io.Writer) (int64, error)

	Close() error
}

// storeBatch is one atomic unit of durable change (docs/protocol.md §16.1).
type storeBatch struct {
	conversations []conversationRecord
	executions    []executionRecord // put (insert or replace)
	events        []storedEvent
	artifacts     []storedArtifact
	actions       []actionRecord // put
	idempotency   []idempotencyRecord
	checkpoints   []checkpointRecord // put: execution id → the provider's checkpoint
	providerState []stateRecord      // put: a provider's durable key/value
	// deletions removes executions with everything that hangs off them: events, artifacts,
	// action records and the idempotency record that points at them (retention).
	deletions []executionRecord
	// outboxResults are the webhook sender's outcomes (outbox.go). New outbox rows are not
	// listed here: the store makes them from the events, in the same transaction.
	outboxResults []outboxResult
}

// size approximates the bytes b holds, for the bound on what waits for a commit.
func (b *storeBatch) size() int {
	n := 256 * (len(b.conversations) + len(b.executions) + len(b.artifacts) + len(b.actions) + len(b.idempotency) + len(b.deletions) + len(b.outboxResults))
	for _, c := range b.checkpoints {
		n += len(c.data) + 64
	}
	for _, st := range b.providerState {
		n += len(st.key) + len(st.value) + 64
	}
	for _, e := range b.events {
		n += len(e.event.JSON) + 64
	}
	return n
}

func (b *storeBatch) empty() bool {
	return len(b.conversations) == 0 && len(b.executions) == 0 && len(b.events) == 0 &&
		len(b.artifacts) == 0 && len(b.actions) == 0 && len(b.idempotency) == 0 && len(b.deletions) == 0 &&
		len(b.checkpoints) == 0 && len(b.providerState) == 0 && len(b.outboxResults) == 0
}

// conversationRecord is the durable form of a conversation: the wire object's fields and, beside
// them, the tenant that created it (absent in records written before tenancy: the anonymous
// tenant).
type conversationRecord struct {
	api.Conversation
	Tenant string `json:"tenant,omitempty"`
}

// executionRecord is the durable form of an execution: the wire object plus what the runtime needs
// to find the things that belong to it.
type executionRecord struct {
	Execution      api.Execution `json:"execution"`
	IdempotencyKey *string       `json:"idempotencyKey,omitempty"`
	ActionIDs      []string      `json:"actionIds,omitempty"`
	// PendingActionID is the action awaiting a response, "" when none.
	PendingActionID string `json:"pendingActionId,omitempty"`
	// Tenant owns the execution: the tenant of its conversation ("" = anonymous, see tenant.go).
	Tenant string `json:"tenant,omitempty"`
}

type storedEvent struct {
	executionID string
	event       Event
}

type storedArtifact struct {
	index    int // position in the execution's creation order
	artifact api.Artifact
}

// actionStatus is where an action stands. Only resolved actions answer ACTION_ALREADY_RESOLVED;
// abandoned ones (the execution was cancelled, failed or the runtime restarted) answer
// ACTION_NOT_FOUND, like unknown ids (docs/protocol.md §7.2).
type actionStatus string

const (
	actionPending   actionStatus = "pending"
	actionResolved  actionStatus = "resolved"
	actionAbandoned actionStatus = "abandoned"
)

type actionRecord struct {
	Request api.ActionRequest `json:"request"`
	Status  actionStatus      `json:"status"`
}

// idempotencyRecord binds (tenant, conversationId, idempotencyKey) to the first execution started
// with it and the fingerprint of that request (docs/protocol.md §6).
type idempotencyRecord struct {
	ConversationID string `json:"conversationId"`
	Key            string `json:"key"`
	Fingerprint    string `json:"fingerprint"`
	ExecutionID    string `json:"executionId"`
	Tenant         string `json:"tenant,omitempty"`
}
