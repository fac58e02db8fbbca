package backend

import (
	"context"
	"fmt"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
)

// Reads on the owner, fresh enough for what other nodes show. A change of an execution becomes
// visible to other nodes when the store commits it, and to this node's readers a moment later,
// when the commit's Done publishes it (published.go). On one node nobody can see the gap. In a
// cluster a client can: it reads run.completed from a stream on node B, then asks the owner A
// for the execution, and A, still publishing, would answer running. So on a shared store, a
// read of a live execution first waits until every change submitted before the read has
// settled (its commit ended: published, or failed): whatever another node showed the client was
// committed before the read began, and is published here once that wait is over. The wait is at
// most one commit, and only when one is in flight.

// awaitSettled waits until every change of x submitted before the call has settled (or the
// runtime closed, or ctx ended). A no-op on a single-node store.
func (x *execution) awaitSettled(ctx context.Context) error {
	if x.rt.cluster == nil {
		return nil
	}
	target := x.submitted.Load()
	// Bounded: commits wait for a stalled database, a reader does not (UNAVAILABLE).
	timeout := time.NewTimer(x.rt.opts.StoreTimeout)
	defer timeout.Stop()
	for {
		done, ch := x.settledWait(target)
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout.C:
			return internalError("wait for the execution's commits", fmt.Errorf("not published within %s: %w", x.rt.opts.StoreTimeout, store.ErrUnavailable))
		}
	}
}
