package backend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
)

// errLeaseLost is the cause of the provider contexts of a node that could not renew its lease
// in time: another node may already have failed its executions, so it stops them and commits
// nothing more for them.
var errLeaseLost = errors.New("this node's lease expired")

// leaseLoop renews this node's lease every third of its length and, on the same tick, fails the
// unfinished executions of every node whose lease expired. renewed is when the lease taken by
// Open was asked for.
func (r *Runtime) leaseLoop(renewed time.Time) {
	c := r.coord
	ticker := time.NewTicker(c.lease / 3)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
		case <-c.stop:
			return
		}
		// Checked before renewing: after a pause (a stopped process, a long GC) the renewal
		// would succeed, yet other nodes may have taken the lease over in the meantime.
		if time.Since(renewed) >= c.lease {
			r.fence()
		}
		asked := time.Now()
		ctx, cancel := context.WithTimeout(c.ctx, c.lease/3)
		err := c.store.RenewLease(ctx, c.lease)
		cancel()
		if err != nil {
			r.storeErrors.Error("renew this node's lease", err, "node", c.node)
			continue
		}
		renewed = asked
		c.setFenced(false)
		ctx, cancel = context.WithTimeout(c.ctx, c.lease/3)
		taken, err := c.store.ClaimExpired(ctx)
		cancel()
		if err != nil {
			r.storeErrors.Error("claim the executions of stopped nodes", err)
			continue
		}
		r.failTakenOver(taken)
	}
}

func (c *coordinator) setFenced(v bool) bool {
	c.fencedMu.Lock()
	defer c.fencedMu.Unlock()
	was := c.fenced
	c.fenced = v
	return was
}

// fence stops every execution this node runs, committing nothing for them: its lease is about
// to expire, and the node that takes it over fails them (one run.failed each). Their streams
// on this node end (ErrClosed) and clients resume them by cursor on any node, from the store.
// Executions started after the lease is renewed again run normally.
func (r *Runtime) fence() {
	if r.coord.setFenced(true) {
		return
	}
	r.mu.Lock()
	live := make([]*execution, 0, len(r.live))
	for id, x := range r.live {
		live = append(live, x)
		delete(r.live, id)
	}
	r.mu.Unlock()
	if len(live) > 0 {
		r.log.Error("this node could not renew its lease: its executions are stopped and left to the node that takes it over",
			"node", r.coord.node, "executions", len(live))
	}
	for _, x := range live {
		x.stopRun(errLeaseLost)
		x.closeSubscriptions()
		r.running.release(x.tenant(), x.id)
	}
}

// leaseLost reports whether x was stopped by fence: nothing more may be committed for it.
func (x *execution) leaseLost() bool {
	return errors.Is(context.Cause(x.runCtx), errLeaseLost)
}

// failTakenOver fails the executions of stopped nodes this node claimed: state failed with
// PROVIDER_ERROR naming the node, exactly one run.failed after the last stored event, the
// pending action abandoned (it answers ACTION_NOT_FOUND), as restart recovery does. Each is
// committed alone, so one that cannot be (its owner, not quite dead, appended meanwhile and
// took the sequence) does not hold up the others; it is read again and retried.
func (r *Runtime) failTakenOver(taken []store.Execution) {
	for _, rec := range taken {
		if err := r.failTakenOverOne(rec); err != nil {
			r.log.Error("fail an execution of a stopped node", "execution", rec.Execution.ID, "node", rec.Owner, "err", err)
		}
	}
	if len(taken) > 0 {
		r.log.Warn("failed the executions of stopped nodes", "count", len(taken))
	}
}

func (r *Runtime) failTakenOverOne(rec store.Execution) error {
	const attempts = 3
	message := nodeStoppedMessage(rec.Owner)
	var commitErr error
	for range attempts {
		if isTerminalState(rec.Execution.State) {
			return nil
		}
		batch := &store.Batch{}
		if err := addFailure(r.store, batch, rec, now(), message, r.reportUndecodable); err != nil {
			return err
		}
		if commitErr = r.store.Commit(batch); commitErr == nil {
			r.observer.EventsAppended(1)
			return nil
		}
		fresh, found, err := r.store.Execution(rec.Execution.ID)
		if err != nil {
			return err
		}
		if !found {
			return nil // deleted meanwhile (retention): nothing to fail
		}
		rec = fresh
	}
	return fmt.Errorf("after %d attempts: %w", attempts, commitErr)
}
