package store

import (
	"errors"
	"strings"
)

// A conversation's busy policy (docs/protocol.md, "Busy conversations") is a precondition the
// store checks in the commit that creates an execution, as it checks idempotency keys and
// lease epochs: what a start under `reject`, `enqueue` or `interrupt` sees of the other
// executions of its conversation is what the store holds at that commit, so no two starts (on
// one node or several) can both believe the conversation was idle. Starts under `parallel`, the
// default, carry no Turn and cost nothing more.

// Turn asks the store to apply its batch only in view of the conversation's other executions:
// those whose state is not terminal when the batch is applied (earlier batches of the same
// commit included), in arrival order (creation time, then id: the listing's order, oldest
// first). The batch holds the new execution's record (Executions, same ExecutionID).
//
//   - Reject: when there is any, the batch fails with a *BusyError naming them (errors.Is
//     ErrBusy) and nothing of it is applied.
//   - Otherwise the store sets WaitingFor to them, here and in the execution's record in the
//     batch (Execution.WaitingFor, left out when empty) before writing it: the executions the
//     new one waits for.
//
// A Parallel turn (a start that overrides its conversation's policy with parallel) checks and
// records nothing: the store only orders it among the conversation's turns (PostgreSQL: it
// takes the conversation's lock), so that the turns committed after it see it.
type Turn struct {
	ConversationID string
	ExecutionID    string
	Reject         bool
	Parallel       bool
	// WaitingFor is set by the store when the batch is applied (nil when there is none).
	WaitingFor []string
}

// ErrBusy is matched (errors.Is) by the *BusyError of a batch whose Turn rejects a start while
// other executions of its conversation are not terminal. Nothing of the batch is applied; the
// Committer retries its neighbours alone, as for ErrConflict.
var ErrBusy = errors.New("conversation busy")

// BusyError names what made a Turn reject its start.
type BusyError struct {
	ConversationID string
	ExecutionIDs   []string // not terminal when the batch was applied, in arrival order
}

func (e *BusyError) Error() string {
	return "conversation " + e.ConversationID + " is busy with " + strings.Join(e.ExecutionIDs, ", ")
}

// Is makes errors.Is(err, ErrBusy) match.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// SettleTurn is what a store does for t once it found others, the conversation's executions
// other than t's own that are not terminal, in arrival order: a *BusyError when t rejects and
// there are any, else others recorded as what t's execution (in b) waits for.
func SettleTurn(b *Batch, t *Turn, others []string) error {
	if len(others) == 0 || t.Parallel {
		t.WaitingFor = nil
		return nil
	}
	if t.Reject {
		return &BusyError{ConversationID: t.ConversationID, ExecutionIDs: others}
	}
	t.WaitingFor = others
	for i := range b.Executions {
		if b.Executions[i].Execution.ID == t.ExecutionID {
			b.Executions[i].Execution.WaitingFor = others
		}
	}
	return nil
}
