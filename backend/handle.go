package backend

import (
	"context"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Handle is an execution as the runtime's operations see it, wherever it lives: every public
// operation on one execution is "locate it, then ask the handle", and none switches on where
// the execution is. There are four kinds:
//
//   - liveHandle (handle_live.go): running (or finishing) in this process;
//   - finishedHandle: finished recently here, its record and complete log in memory;
//   - storedHandle: only in the store, and terminal — by construction: an execution enters
//     the live map before its start is committed (start.go) and leaves it only after its
//     terminal commit, so a non-terminal record that is not live here is another node's;
//   - another node's (Cluster.Remote, package backend/cluster): on a store shared by several
//     nodes, not terminal and not running here, reached through the store. Never made on a
//     single-node store.
//
// Its methods are the runtime's operations of the same names, after the checks every
// location shares (the runtime open, the caller's tenant, the cursor's range).
type Handle interface {
	// Snapshot is the execution's current wire object, never older than what any reader was
	// shown before the call.
	Snapshot(ctx context.Context) (api.Execution, error)
	// Events returns committed events after the cursor, at most limit (<= 0: no limit).
	Events(ctx context.Context, after int64, limit int) ([]Event, error)
	// Follow is the source of a new subscription to the execution's events.
	Follow() (EventSource, error)
	// Cancel returns once the execution is final (see Runtime.CancelExecution).
	Cancel(ctx context.Context, reason *string) (api.Execution, error)
	// Respond answers action actionID (see Runtime.RespondToAction).
	Respond(ctx context.Context, actionID string, decode func() (api.ActionResponse, error)) (api.Execution, error)
}

// EventSource is what a Subscription reads: one execution's log, as far as it is committed.
type EventSource interface {
	// Ready is closed when Read at cursor has something to return: events after it, the end
	// of a complete log, or the runtime closing.
	Ready(cursor int64) <-chan struct{}
	// Read returns up to max events after cursor without blocking (max <= 0: all available)
	// and whether the log was complete before the read (its terminal event committed). Once
	// the runtime closed it fails with ErrClosed; once this node was fenced off the execution,
	// with UNAVAILABLE (another node serves it).
	Read(cursor int64, max int) (events []Event, complete bool, err error)
	// Exhausted reports, without reading, whether the log is complete and cursor is at or past
	// its end; false when the source cannot tell (it ends by itself).
	Exhausted(cursor int64) bool
	// AwaitingAction reports whether the execution waits for the response to an action.
	AwaitingAction() bool
	// Release hands the source back; called once, when the subscription ends.
	Release()
}
