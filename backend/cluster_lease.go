package backend

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
)

// Leases (docs/scale-out.md, "Leases and fencing"). Three rules keep one node's trouble from
// harming the others:
//
//   - Renewal never waits for work: renewLoop only renews (its own goroutine, its own store
//     calls, bounded by a third of the lease); takeovers run beside it in takeoverLoop.
//   - A node acts on what it can vouch for: while its last renewal is older than a lease it is
//     unsure (another node may be claiming it) and refuses new work with UNAVAILABLE and serves
//     reads from the store; it does not stop anything, since nobody may have claimed it (a
//     database stall that every node saw). It stops its executions only when the store says it
//     was claimed (store.ErrFenced), and the store refuses their writes from the claim on.
//   - A node judges others only after holding its own lease for a whole lease with no failed
//     renewal: a node that comes back from the same outage as the others (a database restart)
//     gives them the time to renew before it claims anybody.

// errLeaseLost is the cause of the provider contexts of the executions a node ran under a lease
// epoch another node claimed: they are that node's now, and this one commits nothing for them.
var errLeaseLost = errors.New("this node's lease was taken over by another node")

// leaseState is this node's lease as it knows it.
type leaseState struct {
	mu sync.Mutex
	// epoch is the lease's fencing token (store.Batch.Lease); 0 between a fence and the next
	// acquisition.
	epoch int64
	// renewed is when the last successful renewal (or the acquisition) was asked for: the lease
	// runs at least a lease from then, by the store's clock.
	renewed time.Time
	// heldSince starts the current run of renewals none of which came a whole lease after the
	// previous one.
	heldSince time.Time
	// troubleAt is when a renewal last failed (not fenced: the store did not answer).
	troubleAt time.Time
}

// epoch is the current lease epoch (0 while this node holds none).
func (c *coordinator) epoch() int64 {
	c.held.mu.Lock()
	defer c.held.mu.Unlock()
	return c.held.epoch
}

// sure reports whether this node can vouch for its lease: it holds an epoch renewed less than a
// lease ago, so no other node can have claimed it yet.
func (c *coordinator) sure() bool {
	c.held.mu.Lock()
	defer c.held.mu.Unlock()
	return c.held.epoch != 0 && time.Since(c.held.renewed) < c.lease
}

// mayClaim reports whether this node may judge others: sure, and renewing for a whole lease.
func (c *coordinator) mayClaim() bool {
	c.held.mu.Lock()
	defer c.held.mu.Unlock()
	now := time.Now()
	return c.held.epoch != 0 && now.Sub(c.held.renewed) < c.lease && now.Sub(c.held.heldSince) >= c.lease &&
		now.Sub(c.held.troubleAt) >= c.lease
}

// markTrouble records a renewal the store did not answer.
func (c *coordinator) markTrouble() {
	c.held.mu.Lock()
	c.held.troubleAt = time.Now()
	c.held.mu.Unlock()
}

// acquire takes the lease under a new epoch.
func (c *coordinator) acquire() error {
	asked := time.Now()
	ctx, cancel := context.WithTimeout(c.ctx, c.lease/3)
	defer cancel()
	epoch, err := c.store.AcquireLease(ctx, c.lease)
	if err != nil {
		return err
	}
	c.held.mu.Lock()
	c.held.epoch, c.held.renewed, c.held.heldSince = epoch, asked, asked
	c.held.mu.Unlock()
	return nil
}

// markRenewed records a renewal of epoch asked for at asked.
func (c *coordinator) markRenewed(epoch int64, asked time.Time) {
	c.held.mu.Lock()
	defer c.held.mu.Unlock()
	if c.held.epoch != epoch {
		return
	}
	if asked.Sub(c.held.renewed) >= c.lease {
		c.held.heldSince = asked // a gap: others may have judged this node meanwhile
	}
	c.held.renewed = asked
}

// dropEpoch forgets epoch (fenced); false when it was not the current one.
func (c *coordinator) dropEpoch(epoch int64) bool {
	c.held.mu.Lock()
	defer c.held.mu.Unlock()
	if c.held.epoch != epoch {
		return false
	}
	c.held.epoch = 0
	return true
}

// kickRenewal makes renewLoop renew at once (a commit was fenced: is the lease gone?).
func (c *coordinator) kickRenewal() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// vouch refuses new work while this node cannot vouch for its lease (UNAVAILABLE).
func (r *Runtime) vouch() error {
	if r.coord != nil && !r.coord.sure() {
		return errLeaseUnsure
	}
	return nil
}

// renewLoop renews this node's lease every third of its length, and at once when a commit was
// fenced. Nothing else runs here, so no amount of other work can make it late.
func (r *Runtime) renewLoop(stop <-chan struct{}) {
	c := r.coord
	ticker := time.NewTicker(c.lease / 3)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
		case <-c.kick:
		case <-stop:
			return
		}
		r.renew()
	}
}

// renew renews the lease once; on store.ErrFenced it fences what ran under the lost epoch and
// takes a new one.
func (r *Runtime) renew() {
	c := r.coord
	epoch := c.epoch()
	if epoch != 0 {
		asked := time.Now()
		ctx, cancel := context.WithTimeout(c.ctx, c.lease/3)
		err := c.store.RenewLease(ctx, epoch, c.lease)
		cancel()
		switch {
		case err == nil:
			c.markRenewed(epoch, asked)
			return
		case !errors.Is(err, store.ErrFenced):
			c.markTrouble()
			r.storeErrors.Error("renew this node's lease", err, "node", c.node)
			return
		}
		r.fenceEpoch(epoch)
	}
	if err := c.acquire(); err != nil {
		r.storeErrors.Error("take a new lease epoch after this node's lease was taken over", err, "node", c.node)
		return
	}
	r.log.Info("this node took a new lease epoch and serves new work again", "node", c.node, "epoch", c.epoch())
}

// fenceEpoch stops every execution this node runs under epoch, which another node claimed: it
// owns them now (and fails or resumes them). Nothing is committed for them here (the store
// would refuse it); they leave the live map, so every read is served from the store, and their
// streams on this node end: clients resume by cursor and see the store's truth.
func (r *Runtime) fenceEpoch(epoch int64) {
	if !r.coord.dropEpoch(epoch) {
		return
	}
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
		r.dropFenced(x)
	}
	r.log.Error("this node's lease was taken over by another node: it stopped the executions it ran under it, which that node fails or resumes; their streams here end and resume from the store",
		"node", r.coord.node, "epoch", epoch, "executions", len(fenced))
}

// dropFenced stops x, whose writes the store fences, without committing anything for it.
func (r *Runtime) dropFenced(x *execution) {
	x.stopRun(errLeaseLost)
	x.closeSubscriptions()
	r.running.release(x.tenant(), x.id)
}

// fenced handles a commit of x that the store fenced (called on the store's commit goroutine:
// quick, no submission). x stops and leaves the live map, and the lease is checked at once:
// the epoch is most likely gone, and everything else that ran under it goes too.
func (r *Runtime) fenced(x *execution) {
	// Still live unless fenceEpoch dropped it already (a start's first commit fenced: its caller
	// is answered UNAVAILABLE).
	r.mu.Lock()
	mine := r.live[x.id] == x
	if mine {
		delete(r.live, x.id)
	}
	r.mu.Unlock()
	if mine {
		r.dropFenced(x)
	} else {
		x.stopRun(errLeaseLost)
	}
	if r.coord != nil {
		r.coord.kickRenewal()
	}
}

// leaseLost reports whether x was stopped by a fence: nothing more may be committed for it.
func (x *execution) leaseLost() bool {
	return errors.Is(context.Cause(x.runCtx), errLeaseLost)
}

// takeoverLoop claims the nodes whose lease expired and takes their executions over, beside
// renewLoop: however long a takeover takes, this node's own lease is renewed on time.
func (r *Runtime) takeoverLoop(stop <-chan struct{}) {
	c := r.coord
	var pending []store.Execution // claimed, not yet taken over (the store refused)
	ticker := time.NewTicker(c.lease / 3)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
		case <-stop:
			return
		}
		if !c.mayClaim() {
			continue
		}
		ctx, cancel := context.WithTimeout(c.ctx, c.lease/3)
		taken, err := c.store.ClaimExpired(ctx)
		cancel()
		if err != nil {
			r.storeErrors.Error("claim the executions of stopped nodes", err)
		}
		pending = r.takeOver(append(pending, taken...))
	}
}

// takeOver finishes what stopped nodes left, for the executions this node claimed: an
// execution whose provider can re-attach (a Resumer registered here) continues on this node, as
// it would after a restart of its own node; every other one fails with PROVIDER_ERROR naming
// the stopped node, exactly one run.failed after the last stored event and its pending action
// abandoned (it answers ACTION_NOT_FOUND), as restart recovery does, many per commit. What
// could not be done (the store refused) is returned, and the next tick tries it again: nobody
// else will, since the claim made this node responsible for them.
func (r *Runtime) takeOver(taken []store.Execution) (left []store.Execution) {
	if len(taken) == 0 {
		return nil
	}
	epoch := r.coord.epoch()
	if epoch == 0 {
		return taken // fenced meanwhile: nothing may be written until a new epoch is held
	}
	began := time.Now()
	var toFail []store.Execution
	for _, rec := range taken {
		if !r.canResume(rec) {
			toFail = append(toFail, rec)
			continue
		}
		if err := r.resumeTakenOver(rec, epoch); err != nil {
			r.log.Error("take over an execution of a stopped node", "execution", rec.Execution.ID, "node", rec.Owner, "err", err)
			left = append(left, rec)
		}
	}
	failed, notFailed, err := failAbandoned(r.store, epoch, time.Now(), toFail, func(rec store.Execution) string {
		return nodeStoppedMessage(rec.Owner)
	}, r.reportUndecodable, r.coord.stop)
	if err != nil {
		r.storeErrors.Error("fail the executions of a stopped node", err, "left", len(notFailed))
	}
	left = append(left, notFailed...)
	r.observer.EventsAppended(failed)
	if n := len(taken) - len(left); n > 0 {
		r.log.Warn("took over the executions of stopped nodes", "count", n, "failed", failed, "took", time.Since(began).Round(time.Millisecond))
	}
	return left
}

// resumeTakenOver makes this node the owner of rec (commands reach it here from now on) and
// resumes it.
func (r *Runtime) resumeTakenOver(rec store.Execution, epoch int64) error {
	rec.Owner = r.node
	if err := r.store.Commit(&store.Batch{Executions: []store.Execution{rec}, Lease: epoch}); err != nil {
		return err
	}
	return r.resumeExecution(rec)
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
	if r.coord != nil && r.coord.lastRenewalFailed() {
		// Still sure of the lease, but the store did not answer the last renewal: requests are
		// about to wait for it. Out of the balancer's rotation now rather than a lease later.
		return &Error{Code: CodeUnavailable, Message: msgStoreUnavailable}
	}
	return nil
}

// lastRenewalFailed reports whether the last renewal attempt failed (the store did not answer).
func (c *coordinator) lastRenewalFailed() bool {
	c.held.mu.Lock()
	defer c.held.mu.Unlock()
	return c.held.troubleAt.After(c.held.renewed)
}
