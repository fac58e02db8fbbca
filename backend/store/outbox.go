package store

import (
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// The webhook outbox is part of the store contract, so that any store can carry it:
//
//   - new rows are made by an OutboxPlanner the store calls inside the transaction that writes
//     an event of a type the planner wants, with the execution as that transaction leaves it
//     (the batch's own record when it has one, else the stored one);
//   - the sender reads due rows with OutboxHeads (the first pending row of every lane: one
//     execution × one target, in sequence order) and reports each attempt's outcome in a
//     Batch (OutboxResults), committed like any other change;
//   - deleting an execution (retention) deletes its rows, pending or failed.
//
// A store shared by several nodes must hand each head to one sender at a time (PostgreSQL:
// SELECT … FOR UPDATE SKIP LOCKED on the lane heads); bbolt has one process by construction.

// TargetIDLen is the length of a webhook target's id (a digest of its URL) in Notification.
const TargetIDLen = 8

// Notification is one outbox row: one event for one target. Its key is (ExecutionID,
// Sequence, Target).
type Notification struct {
	ExecutionID string            `json:"executionId"`
	Sequence    int64             `json:"sequence"`
	Target      [TargetIDLen]byte `json:"target"`
	URL         string            `json:"url"`  // where it goes (the secret is never stored)
	Body        []byte            `json:"body"` // the payload, sent and signed byte for byte
	CreatedAt   time.Time         `json:"createdAt"`
	NextAttempt time.Time         `json:"nextAttempt"`
	Attempts    int               `json:"attempts"`
	LastError   string            `json:"lastError,omitempty"`
	FailedAt    *time.Time        `json:"failedAt,omitempty"` // set once recorded as failed
}

// Lane is what orders delivery: the next notification of a lane waits for the previous one.
func (n *Notification) Lane() string { return n.ExecutionID + string(n.Target[:]) }

// OutboxOutcome is what an attempt did to a notification.
type OutboxOutcome int

const (
	OutboxRetry     OutboxOutcome = iota // keep it, with its attempt count and next attempt updated
	OutboxDelivered                      // remove it
	OutboxFailed                         // move it to the failed rows, kept for inspection
)

// OutboxResult is the outcome of one attempt. A store applies it only while the row is still
// pending: retention may have deleted it while the request was in flight.
type OutboxResult struct {
	Notification Notification
	Outcome      OutboxOutcome
}

// OutboxPlanner makes the rows for a committed event; the runtime's webhook planner is one.
type OutboxPlanner interface {
	// Wants reports whether events of this type make rows at all (cheap: called per event).
	Wants(typ api.StandardEventType) bool
	// Notifications returns the rows for e, with the execution's record as the transaction
	// leaves it (the record, not only the wire object: a subscription may be limited to tenants).
	Notifications(executionID string, e Event, rec Execution, at time.Time) ([]Notification, error)
	// Committed is called after a commit that wrote rows: the sender's wake-up. Quick.
	Committed()
}

// ErasurePlanner is implemented by an OutboxPlanner that also announces erasures
// (store.Batch.Erasures): a store whose planner implements it calls ErasureNotifications in
// the erasure's transaction, with the tombstone it writes, and stores the rows like an
// event's. A row's ExecutionID is the conversation's id and its Sequence 0: lanes stay per
// target (one erasure per conversation ever, so its lane holds that one row), and deleting
// the conversation's executions never deletes the row that announces it.
type ErasurePlanner interface {
	ErasureNotifications(t Tombstone, at time.Time) ([]Notification, error)
}
