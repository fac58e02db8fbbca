package backend

import (
	"context"
	"fmt"
)

// Fencing (docs/scale-out.md, "Leases and fencing"): every batch of an execution carries the
// lease epoch it runs under (store.Batch.Lease), and a store shared by several nodes applies
// it only while this node holds that epoch. Once another node claimed it, nothing more is
// committed here for what ran under it: the runtime learns it from store.ErrFenced, on a
// commit (fenced) or through its cluster's renewal (fenceEpoch).

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
	fenced := r.live.removeLease(epoch)
	for _, x := range fenced {
		x.dropFenced()
	}
	return len(fenced)
}

// vouch refuses new work while this node cannot vouch for its lease (UNAVAILABLE).
func (r *Runtime) vouch() error {
	if r.cluster != nil && !r.cluster.Sure() {
		return errLeaseUnsure
	}
	return nil
}

// admit refuses new executions while this node's lease renewals fall behind (Cluster.Admits):
// UNAVAILABLE, as when it cannot vouch for its lease, so clients retry (another node may serve
// them) while this node's renewals catch up.
func (r *Runtime) admit() error {
	if r.cluster != nil && !r.cluster.Admits() {
		if !r.cluster.Sure() {
			return errLeaseUnsure
		}
		return errLeaseBehind
	}
	return nil
}

// errLeaseBehind refuses new executions on a node whose lease renewals fall behind.
var errLeaseBehind = &Error{Code: CodeUnavailable, Message: msgLeaseBehind}

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
