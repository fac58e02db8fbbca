package backend

import (
	"context"
	"errors"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
)

// errLeaseLost is the cause of the provider contexts of a node that could not renew its lease
// in time: another node may already have failed its executions, so it stops them and commits
// nothing more for them.
var errLeaseLost = errors.New("this node's lease expired")

// leaseLoop renews this node's lease every third of its length and, on the same tick, takes
// over the unfinished executions of every node whose lease expired. renewed is when the lease
// taken by Open was asked for.
func (r *Runtime) leaseLoop(renewed time.Time) {
	c := r.coord
	var pending []store.Execution // claimed, not yet taken over (the store refused)
	var fenced []string           // this node's executions fence stopped, not yet finished
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
			fenced = append(fenced, r.fence()...)
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
		}
		pending = r.takeOver(append(pending, taken...))
		fenced = r.finishFenced(fenced)
	}
}

func (c *coordinator) setFenced(v bool) bool {
	c.fencedMu.Lock()
	defer c.fencedMu.Unlock()
	was := c.fenced
	c.fenced = v
	return was
}

// fence stops every execution this node runs, committing nothing for them, and returns their
// ids: its lease may have expired, and the node that takes it over fails them. Their streams on
// this node end (ErrClosed) and clients resume them by cursor on any node, from the store.
// Executions started after the lease is renewed again run normally.
func (r *Runtime) fence() []string {
	if r.coord.setFenced(true) {
		return nil
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
	ids := make([]string, len(live))
	for i, x := range live {
		x.stopRun(errLeaseLost)
		x.closeSubscriptions()
		r.running.release(x.tenant(), x.id)
		ids[i] = x.id
	}
	return ids
}

// finishFenced fails, once this node holds its lease again, those of the executions fence
// stopped that no other node took over: when the store was out of reach for everyone (a
// database failover), nobody may have claimed this node, and its stopped executions would
// otherwise stay running forever. They fail as a takeover fails them, naming this node; none is
// resumed here, even when its provider could re-attach, since a node that claimed this one
// meanwhile may be resuming it. The log is the judge (failUnfinished): an execution that
// another node finished is left alone. Returns the ids the store could not answer for.
func (r *Runtime) finishFenced(ids []string) (left []string) {
	for _, id := range ids {
		rec, found, err := r.store.Execution(id)
		if err == nil && found && !isTerminalState(rec.Execution.State) && rec.Owner == r.node {
			var failed bool
			failed, err = failUnfinished(r.store, rec, nodeStoppedMessage(r.node), r.reportUndecodable)
			if failed {
				r.observer.EventsAppended(1)
			}
		}
		if err != nil {
			r.storeErrors.Error("fail an execution this node stopped when it lost its lease", err, "execution", id)
			left = append(left, id)
		}
	}
	return left
}

// leaseLost reports whether x was stopped by fence: nothing more may be committed for it.
func (x *execution) leaseLost() bool {
	return errors.Is(context.Cause(x.runCtx), errLeaseLost)
}

// takeOver finishes what stopped nodes left, for the executions this node claimed: an
// execution whose provider can re-attach (a Resumer registered here) continues on this node, as
// it would after a restart of its own node; every other one fails with PROVIDER_ERROR naming
// the stopped node, exactly one run.failed after the last stored event and its pending action
// abandoned (it answers ACTION_NOT_FOUND), as restart recovery does. Each is handled alone, so
// one that cannot be does not hold up the others; what could not be done (the store refused)
// is returned, and the lease loop tries it again on its next tick: nobody else will, since the
// claim made this node responsible for them.
func (r *Runtime) takeOver(taken []store.Execution) (left []store.Execution) {
	for _, rec := range taken {
		var err error
		if r.canResume(rec) {
			err = r.resumeTakenOver(rec)
		} else {
			err = r.failTakenOver(rec)
		}
		if err != nil {
			r.log.Error("take over an execution of a stopped node", "execution", rec.Execution.ID, "node", rec.Owner, "err", err)
			left = append(left, rec)
		}
	}
	if n := len(taken) - len(left); n > 0 {
		r.log.Warn("took over the executions of stopped nodes", "count", n)
	}
	return left
}

// resumeTakenOver makes this node the owner of rec (commands reach it here from now on) and
// resumes it.
func (r *Runtime) resumeTakenOver(rec store.Execution) error {
	rec.Owner = r.node
	if err := r.store.Commit(&store.Batch{Executions: []store.Execution{rec}}); err != nil {
		return err
	}
	return r.resumeExecution(rec)
}

// failTakenOver fails rec, an execution of a stopped node, with PROVIDER_ERROR naming it.
func (r *Runtime) failTakenOver(rec store.Execution) error {
	failed, err := failUnfinished(r.store, rec, nodeStoppedMessage(rec.Owner), r.reportUndecodable)
	if failed {
		r.observer.EventsAppended(1)
	}
	return err
}
