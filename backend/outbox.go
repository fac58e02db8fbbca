package backend

import (
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// The webhook outbox is part of the store seam, so that any store can carry it:
//
//   - new rows are made by an outboxPlanner the store calls inside the transaction that writes
//     an event of a subscribed type, with the execution as that transaction leaves it (bbolt:
//     applyBatch; a PostgreSQL store would call it the same way in its transaction);
//   - the sender reads due rows with outboxStore.OutboxHeads (the first pending row of every
//     lane: one execution × one target, in sequence order) and reports each attempt's outcome
//     in a storeBatch (outboxResults), committed like any other change;
//   - deleting an execution (retention) deletes its rows, pending or failed.
//
// A store shared by several nodes must hand each head to one sender at a time (PostgreSQL:
// SELECT … FOR UPDATE SKIP LOCKED on the lane heads); bbolt has one process by construction.

// notification is one outbox row: one event for one target.
type notification struct {
	ExecutionID string            `json:"executionId"`
	Sequence    int64             `json:"sequence"`
	Target      [targetIDLen]byte `json:"target"`
	URL         string            `json:"url"`  // where it goes (the secret is never stored)
	Body        []byte            `json:"body"` // the payload, sent and signed byte for byte
	CreatedAt   time.Time         `json:"createdAt"`
	NextAttempt time.Time         `json:"nextAttempt"`
	Attempts    int               `json:"attempts"`
	LastError   string            `json:"lastError,omitempty"`
	FailedAt    *time.Time        `json:"failedAt,omitempty"` // set once recorded as failed
}

// lane is what orders delivery: the next notification of a lane waits for the previous one.
func (n *notification) lane() string { return n.ExecutionID + string(n.Target[:]) }

// outboxOutcome is what an attempt did to a notification.
type outboxOutcome int

const (
	outboxRetry     outboxOutcome = iota // keep it, with its attempt count and next attempt updated
	outboxDelivered                      // remove it
	outboxFailed                         // move it to the failed rows, kept for inspection
)

// outboxResult is the outcome of one attempt. Applied only while the row is still pending:
// retention may have deleted it while the request was in flight.
type outboxResult struct {
	n       notification
	outcome outboxOutcome
}

// outboxPlanner makes the rows for a committed event; see webhookPlanner.
type outboxPlanner interface {
	wants(typ api.StandardEventType) bool
	notifications(executionID string, e Event, exec api.Execution, at time.Time) ([]notification, error)
	// committed is called after a commit that wrote rows: the sender's wake-up. Quick.
	committed()
}

func (p *webhookPlanner) committed() { p.wake() }

// outboxStore is the outbox's part of the store interface.
type outboxStore interface {
	// OutboxHeads returns, in lane order, the first pending notification of every lane that
	// busy does not report, if it is due at now (at most limit of them); the earliest
	// NextAttempt among heads not yet due (zero: none); and the creation time of the oldest
	// pending notification (zero: the outbox is empty).
	OutboxHeads(now time.Time, busy func(lane string) bool, limit int) (due []notification, nextDue, oldest time.Time, err error)
	// FailedNotifications lists the notifications of an execution recorded as failed.
	FailedNotifications(executionID string) ([]notification, error)
	// PendingNotifications counts the notifications waiting for delivery.
	PendingNotifications() (int, error)
}
