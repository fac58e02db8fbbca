package cluster

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
//     calls — on PostgreSQL its own connection — bounded by a third of the lease); takeovers
//     run beside it in takeoverLoop.
//   - A node acts on what it can vouch for: while its last renewal is older than a lease it is
//     unsure (another node may be claiming it) and refuses new work with UNAVAILABLE, ends its
//     event streams (vouch.go) and serves reads from the store; it does not stop any execution,
//     since nobody may have claimed it (a database stall that every node saw). It stops its
//     executions only when the store says it was claimed (store.ErrFenced), and the store
//     refuses their writes from the claim on.
//   - A node judges others only after holding its own lease for a whole lease with no failed
//     renewal: a node that comes back from the same outage as the others (a database restart)
//     gives them the time to renew before it claims anybody.

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
	// lapsed is closed when this node can no longer vouch for its lease, and replaced once it
	// can again (lapsedClosed says which); every subscription ends when the one it took closes
	// (vouch.go).
	lapsed       chan struct{}
	lapsedClosed bool
}

// Epoch is the current lease epoch (0 while this node holds none).
func (c *Cluster) Epoch() int64 {
	c.held.mu.Lock()
	defer c.held.mu.Unlock()
	return c.held.epoch
}

// Sure reports whether this node can vouch for its lease: it holds an epoch renewed less than a
// lease ago, so no other node can have claimed it yet.
func (c *Cluster) Sure() bool {
	c.held.mu.Lock()
	defer c.held.mu.Unlock()
	return c.held.epoch != 0 && time.Since(c.held.renewed) < c.lease
}

// Admits reports whether this node takes new executions: it holds an epoch renewed less than
// two thirds of a lease ago. Renewals come every third of a lease, so a node that admits has
// missed at most one, and still has a third of a lease before anybody may claim it: the work
// it stops taking on is what would otherwise push it past its lease (issue 44).
func (c *Cluster) Admits() bool {
	c.held.mu.Lock()
	defer c.held.mu.Unlock()
	return c.held.epoch != 0 && time.Since(c.held.renewed) < 2*c.lease/3
}

// mayClaim reports whether this node may judge others: sure, and renewing for a whole lease.
func (c *Cluster) mayClaim() bool {
	c.held.mu.Lock()
	defer c.held.mu.Unlock()
	now := time.Now()
	return c.held.epoch != 0 && now.Sub(c.held.renewed) < c.lease && now.Sub(c.held.heldSince) >= c.lease &&
		now.Sub(c.held.troubleAt) >= c.lease
}

// markTrouble records a renewal the store did not answer.
func (c *Cluster) markTrouble() {
	c.held.mu.Lock()
	c.held.troubleAt = time.Now()
	c.held.mu.Unlock()
}

// acquire takes the lease under a new epoch.
func (c *Cluster) acquire() error {
	asked := time.Now()
	ctx, cancel := context.WithTimeout(c.ctx(), c.lease/3)
	defer cancel()
	epoch, err := c.store.AcquireLease(ctx, c.lease)
	if err != nil {
		return err
	}
	c.held.mu.Lock()
	c.held.epoch, c.held.renewed, c.held.heldSince = epoch, asked, asked
	c.vouchAgainLocked()
	c.held.mu.Unlock()
	return nil
}

// markRenewed records a renewal of epoch asked for at asked; true when the node had lapsed
// (it can vouch for its lease again).
func (c *Cluster) markRenewed(epoch int64, asked time.Time) bool {
	c.held.mu.Lock()
	defer c.held.mu.Unlock()
	if c.held.epoch != epoch {
		return false
	}
	if asked.Sub(c.held.renewed) >= c.lease {
		c.held.heldSince = asked // a gap: others may have judged this node meanwhile
	}
	c.held.renewed = asked
	return c.vouchAgainLocked()
}

// dropEpoch forgets epoch (fenced); false when it was not the current one.
func (c *Cluster) dropEpoch(epoch int64) bool {
	c.held.mu.Lock()
	defer c.held.mu.Unlock()
	if c.held.epoch != epoch {
		return false
	}
	c.held.epoch = 0
	c.lapseLocked() // lapsed a while ago, most likely: the claim came after the lease expired
	return true
}

// Fenced makes renewLoop renew at once (a commit was fenced: is the lease gone?).
func (c *Cluster) Fenced() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// renewLoop renews this node's lease every third of its length, and at once when a commit was
// fenced. Nothing else runs here, so no amount of other work can make it late.
func (c *Cluster) renewLoop(stop <-chan struct{}) {
	ticker := time.NewTicker(c.lease / 3)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
		case <-c.kick:
		case <-stop:
			return
		}
		c.renew()
	}
}

// renew renews the lease once; on store.ErrFenced it fences what ran under the lost epoch and
// takes a new one.
func (c *Cluster) renew() {
	epoch := c.Epoch()
	if epoch != 0 {
		asked := time.Now()
		ctx, cancel := context.WithTimeout(c.ctx(), c.lease/3)
		err := c.store.RenewLease(ctx, epoch, c.lease)
		cancel()
		switch {
		case err == nil:
			if c.markRenewed(epoch, asked) {
				c.log.Info("this node can vouch for its lease again (nobody claimed it) and serves new work and streams again", "node", c.node)
			}
			return
		case !errors.Is(err, store.ErrFenced):
			c.markTrouble()
			c.storeErrors.Error("renew this node's lease", err, "node", c.node)
			return
		}
		c.fenceEpoch(epoch)
	}
	if err := c.acquire(); err != nil {
		c.storeErrors.Error("take a new lease epoch after this node's lease was taken over", err, "node", c.node)
		return
	}
	c.log.Info("this node took a new lease epoch and serves new work again", "node", c.node, "epoch", c.Epoch())
}

// fenceEpoch stops every execution this node runs under epoch, which another node claimed: it
// owns them now (and fails or resumes them). The runtime drops them without committing
// anything; their streams here end and clients resume from the store.
func (c *Cluster) fenceEpoch(epoch int64) {
	if !c.dropEpoch(epoch) {
		return
	}
	n := c.host.Fence(epoch)
	c.log.Error("this node's lease was taken over by another node: it stopped the executions it ran under it, which that node fails or resumes; their streams here end and resume from the store",
		"node", c.node, "epoch", epoch, "executions", n)
}

// takeoverLoop claims the nodes whose lease expired and takes their executions over, beside
// renewLoop: however long a takeover takes, this node's own lease is renewed on time. It also
// takes over this node's own orphans (orphans.go).
func (c *Cluster) takeoverLoop(stop <-chan struct{}) {
	var pending []store.Execution // claimed, not yet taken over (the store refused)
	var sweep orphanSweep
	ticker := time.NewTicker(c.lease / 3)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
		case <-stop:
			return
		}
		pending = append(pending, c.orphans(&sweep, pending)...)
		if c.mayClaim() {
			ctx, cancel := context.WithTimeout(c.ctx(), c.lease/3)
			taken, err := c.store.ClaimExpired(ctx)
			cancel()
			if err != nil {
				c.storeErrors.Error("claim the executions of stopped nodes", err)
			}
			pending = append(pending, taken...)
		}
		pending = c.takeOver(pending)
	}
}

// RenewalFailing reports whether the last renewal attempt failed (the store did not answer).
func (c *Cluster) RenewalFailing() bool {
	c.held.mu.Lock()
	defer c.held.mu.Unlock()
	return c.held.troubleAt.After(c.held.renewed)
}

// takeOver hands what this node claimed to the runtime, under the current epoch; what the
// store refused is returned, to try again at the next tick.
func (c *Cluster) takeOver(claimed []store.Execution) []store.Execution {
	if len(claimed) == 0 {
		return nil
	}
	epoch := c.Epoch()
	if epoch == 0 {
		return claimed // fenced meanwhile: nothing may be written until a new epoch is held
	}
	return c.host.TakeOver(claimed, epoch, c.stopping())
}
