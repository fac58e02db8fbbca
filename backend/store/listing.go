package store

import (
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// ListQuery is a validated listing request, as a store reads it.
type ListQuery struct {
	ConversationID string                      // "": every conversation
	States         map[api.ExecutionState]bool // nil: every state
	After          *ListPosition               // nil: from the newest
	Limit          int                         // >= 1
	Tenant         string                      // only this tenant's executions ("" = anonymous)
	// Undecodable, when set, is told of each record the walk skips because it cannot be
	// decoded (store.ErrUndecodable). A listing serves everything else: one damaged record
	// must not make every page answer an error. A page that skipped one may hold fewer than
	// Limit records and still be followed by another.
	Undecodable func(id string, err error)
}

// ListPosition is a place in the listing order: an execution's creation time in milliseconds
// and its id. Positions compare by time, then by id; a listing walks them descending.
type ListPosition struct {
	CreatedMs uint64
	ID        string
}

// timestampLayout is the runtime's createdAt format (api.Timestamp).
const timestampLayout = "2006-01-02T15:04:05.000Z"

// PositionOf is e's place in the listing order. A createdAt that does not parse (the runtime
// writes none) sorts as the oldest.
func PositionOf(e api.Execution) ListPosition {
	var ms uint64
	if t, err := time.Parse(timestampLayout, e.CreatedAt); err == nil && t.UnixMilli() > 0 {
		ms = uint64(t.UnixMilli())
	}
	return ListPosition{CreatedMs: ms, ID: e.ID}
}

// Before reports whether p sorts before q (older, or as old with a smaller id).
func (p ListPosition) Before(q ListPosition) bool {
	if p.CreatedMs != q.CreatedMs {
		return p.CreatedMs < q.CreatedMs
	}
	return p.ID < q.ID
}
