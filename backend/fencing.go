package backend

import (
	"context"
	"errors"
	"fmt"
)

// Fencing (docs/scale-out.md, "Leases and fencing"): every batch of an execution carries the
// lease epoch it runs under (store.Batch.Lease), and a store shared by several nodes applies
// it only while this node holds that epoch. Once another node claimed it, nothing more is
// committed here for what ran under it: the runtime learns it from store.ErrFenced, on a
// commit (fenced) or through its cluster's renewal (fenceEpoch).

// errLeaseLost is the cause of the provider contexts of the executions a node ran under a lease
// epoch another node claimed: they are that node's now, and this one commits nothing for them.
var errLeaseLost = errors.New("this node's lease was taken over by another node")

// errLeaseUnsure refuses new work on a node that cannot vouch for its lease.
var errLeaseUnsure = &Error{Code: CodeUnavailable, Message: msgLeaseUnsure}

// msgNodeStopped is the error of an execution failed because the node that ran it stopped (its
// lease expired).
const msgNodeStopped = "Node %s stopped before the execution finished"

// NodeStoppedMessage is the error message of an execution failed because node, which ran it,
// stopped: its lease expired and another node took its executions over.
func NodeStoppedMessage(node string) string { return fmt.Sprintf(msgNodeStopped, node) }

// fenceEpoch stops every execution this node runs under epoch, which another node claimed: it
// owns them now (and fails or resumes them). Nothing is committed for them here (the store
// would refuse it); they leave the live map, so every read is served from the store, and their
// streams on this node end: clients resume by cursor and see the store's truth.
func (r *Runtime) fenceEpoch(epoch int64) int {
	r.mu.Lock()
	var fenced []*execution
	for id, x := range r.live {
		if x.lease == epoch {
			fenced = append(fenced, x)
			delete(r.live, id)
		}
	}
	r.mu.Unlock()
	for _, x := range fenced {
		x.dropFenced()
	}
	return len(fenced)
}

// dropFenced stops x, whose writes the store fences, without committing anything for it.
func (x *execution) dropFenced() {
	x.stopRun(errLeaseLost)
	x.closeSubscriptions()
	x.rt.running.release(x.tenant(), x.id)
}

// fenced handles a commit of x that the store fenced (called on the store's commit goroutine:
// quick, no submission). x stops and leaves the live map, and the lease is checked at once:
// the epoch is most likely gone, and everything else that ran under it goes too.
func (x *execution) fenced() {
	// Still live unless fenceEpoch dropped it already (a start's first commit fenced: its caller
	// is answered UNAVAILABLE).
	x.rt.mu.Lock()
	mine := x.rt.live[x.id] == x
	if mine {
		delete(x.rt.live, x.id)
	}
	x.rt.mu.Unlock()
	if mine {
		x.dropFenced()
	} else {
		x.stopRun(errLeaseLost)
	}
	if x.rt.cluster != nil {
		x.rt.cluster.Fenced()
	}
}

// leaseLost reports whether x was stopped by a fence: nothing more may be committed for it.
func (x *execution) leaseLost() bool {
	return errors.Is(context.Cause(x.runCtx), errLeaseLost)
}

// vouch refuses new work while this node cannot vouch for its lease (UNAVAILABLE).
func (r *Runtime) vouch() error {
	if r.cluster != nil && !r.cluster.Sure() {
		return errLeaseUnsure
	}
	return nil
}

// Ready reports whether this runtime can take new work now (readiness, /readyz): open and, on a
// shared store, holding a lease it can vouch for (renewed within a lease, which also says the
// store answered). Nil when ready; else an *Error UNAVAILABLE (or ErrClosed).
func (r *Runtime) Ready(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := r.checkOpen(); err != nil {
		return err
	}
	if err := r.vouch(); err != nil {
		return err
	}
	if r.cluster != nil && r.cluster.RenewalFailing() {
		// Still sure of the lease, but the store did not answer the last renewal: requests are
		// about to wait for it. Out of the balancer's rotation now rather than a lease later.
		return &Error{Code: CodeUnavailable, Message: msgStoreUnavailable}
	}
	return nil
}
