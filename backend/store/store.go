package store

import (
	"io"
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Store is everything the runtime needs from durable storage, and nothing more. The runtime
// keeps live state in memory and treats the store as the record of truth: a change becomes
// observable only after Commit returned nil (or a Request's Done was called with nil), and a
// read never sees part of a batch. All methods are safe for concurrent use.
//
// Reads return (zero, false, nil) for a record that does not exist; an error means the store
// could not answer (I/O, a record that cannot be decoded).
type Store interface {
	// Commit applies the batch atomically and durably and returns once it is. Concurrent
	// calls may share one physical commit (group commit). ErrClosed once Close has begun; an
	// error wrapping ErrConflict for a duplicate Idempotency record (nothing applied).
	Commit(b *Batch) error
	// Submit queues a request for the next group commit and returns without waiting for it
	// (unless the queue is full: back-pressure); req.Done reports the outcome, in submission
	// order. ErrClosed once Close has begun (Done is then never called). How requests are
	// grouped is the implementation's business; Committer is the shared helper.
	Submit(req *Request) error

	Conversation(id string) (Conversation, bool, error)
	Execution(id string) (Execution, bool, error)
	// Events returns the execution's events with sequence > after, in sequence order, at most
	// limit of them (limit <= 0: all).
	Events(executionID string, after int64, limit int) ([]Event, error)
	// LastSequence is the sequence of the execution's last event (0 when none).
	LastSequence(executionID string) (int64, error)
	// Artifacts returns the execution's artifacts by Artifact.Index (an empty, non-nil slice
	// when none).
	Artifacts(executionID string) ([]api.Artifact, error)
	Action(id string) (Action, bool, error)
	Idempotency(tenant, conversationID, key string) (Idempotency, bool, error)
	// Checkpoint is the provider checkpoint last committed for the execution.
	Checkpoint(executionID string) ([]byte, bool, error)
	// ProviderState is a provider's durable value under key.
	ProviderState(key string) ([]byte, bool, error)
	// ForEachExecution visits every execution record (recovery and retention sweeps);
	// returning false stops the walk. A record that cannot be decoded is handed to undecodable
	// with its id and the walk goes on: one damaged record must not stop recovery, retention
	// or a restart.
	ForEachExecution(visit func(Execution) bool, undecodable func(id string, err error)) error
	// ListExecutions returns at most q.Limit records of q.Tenant, newest first (ListPosition
	// order, descending), after q.After, and the position to continue from when more may
	// follow (nil on the last page). A record that cannot be decoded is skipped and handed to
	// q.Undecodable (see ListQuery).
	ListExecutions(q ListQuery) ([]Execution, *ListPosition, error)
	// ConversationReader: a tenant's conversations and their activity, for the conversations
	// listing (conversations.go).
	ConversationReader
	// UsageReader: the executions' usage rows, for sums (usage.go).
	UsageReader

	// The inbox, action deadlines and standing rules (approvals.go).
	ActionRecords

	// SetOutboxPlanner makes every later commit write outbox rows for the events p wants, in
	// the transaction that writes them (outbox.go). Called before anything is committed.
	SetOutboxPlanner(p OutboxPlanner)
	// OutboxHeads returns, in lane order, the first pending notification of every lane that
	// busy does not report, if it is due at now (at most limit of them); the earliest
	// NextAttempt among heads not yet due (zero: none); and the creation time of the oldest
	// pending notification (zero: the outbox is empty).
	OutboxHeads(now time.Time, busy func(lane string) bool, limit int) (due []Notification, nextDue, oldest time.Time, err error)
	// FailedNotifications lists the notifications of an execution recorded as failed.
	FailedNotifications(executionID string) ([]Notification, error)
	// PendingNotifications counts the notifications waiting for delivery.
	PendingNotifications() (int, error)

	// Backup writes a consistent copy of the whole store while writes go on, in a form the
	// implementation documents (bbolt: one file its Open accepts), and returns the bytes
	// written. A store that cannot (a database server has its own tools) returns an error
	// wrapping errors.ErrUnsupported.
	Backup(w io.Writer) (int64, error)

	// Close stops accepting writes, commits what was submitted before, then releases the
	// store. Safe to call more than once.
	Close() error
}
