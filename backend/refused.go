package backend

import (
	"errors"

	"github.com/harness-edge/harness-edge/backend/store"
)

// When the store refuses a change of an execution: stranded (it refused writes; the stranded
// loop fails the execution once it accepts them, stranded.go) or fenced (another node claimed
// this node's lease and owns the execution now, fencing.go).

// msgNotStored is the error of an execution failed because the store refused its changes.
const msgNotStored = "Runtime could not store the execution's changes"

// errNotStored is the cause of a stranded execution's provider context.
var errNotStored = errors.New(msgNotStored)

// strand records that the store refused a change of x. Called on the store's commit goroutine
// from a change's done callback (so it must be quick and must not submit); only the first
// failure of x's chain counts.
func (x *execution) strand(err error) {
	if !x.strandReported.CompareAndSwap(false, true) {
		return
	}
	if errors.Is(err, store.ErrConflict) {
		// Only a start's first commit carries an idempotency record: another node bound the key
		// first, nothing was stored, and the start answers with that node's execution.
		x.stopRun(err)
		return
	}
	if errors.Is(err, store.ErrConversationGone) || errors.Is(err, store.ErrConversationSealed) {
		// Only a start's first commit writes into a conversation: it was deleted (or never
		// existed, or is being deleted) and nothing was stored; the start answers NOT_FOUND
		// (CONVERSATION_BUSY while being deleted).
		x.stopRun(err)
		return
	}
	if errors.Is(err, store.ErrFenced) {
		// Another node claimed the lease x runs under: x is its now, nothing is owed here.
		x.fenced()
		return
	}
	if errors.Is(err, store.ErrUnavailable) {
		// Only a start's first commit has a deadline (store.Request.Deadline): the store could
		// not take it in time, its caller is answered UNAVAILABLE and it never existed.
		x.stopRun(err)
		return
	}
	x.stopRun(errNotStored)
	x.rt.storeErrors.Error("store refused an execution's changes: its provider is stopped and it fails once the store accepts writes", err,
		"execution", x.id)
	x.rt.stranded.add(x)
}

// dropFenced stops x, whose writes the store fences, without committing anything for it. Its
// streams here end as a lapsed lease ends them (UNAVAILABLE, an expected end, not logged once
// per stream: fenceEpoch logs the fence once): clients resume on another node.
func (x *execution) dropFenced() {
	x.stopRun(errLeaseLost)
	x.closeSubscriptions(errLeaseUnsure)
	x.rt.running.release(x.tenant(), x.id)
}

// fenced handles a commit of x that the store fenced (called on the store's commit goroutine:
// quick, no submission). x stops and leaves the live map, and the lease is checked at once:
// the epoch is most likely gone, and everything else that ran under it goes too.
func (x *execution) fenced() {
	// Still live unless fenceEpoch dropped it already (a start's first commit fenced: its caller
	// is answered UNAVAILABLE).
	if x.rt.live.leave(x) {
		x.dropFenced()
	} else {
		x.stopRun(errLeaseLost)
	}
	if x.rt.cluster != nil {
		x.rt.cluster.Fenced()
	}
}
