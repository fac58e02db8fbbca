package cluster

import (
	"time"
)

// What a node does with its event streams when it can no longer vouch for its lease
// (docs/scale-out.md, "A node that cannot vouch for its lease"): it ends them all, those of the
// executions it runs and those that follow other nodes' executions through the store, and
// refuses new ones (UNAVAILABLE), so that clients resume from their Last-Event-ID on a node
// that can.
//
// Why within the lease, and not sooner or later. Until a lease has passed since the last
// renewal this node asked for, no other node can have claimed it (the lease runs from the
// store's clock at the renewal, which is no earlier than the asking), so what its streams say
// is still what the cluster holds: a database that answers slowly for a moment, or one missed
// renewal, must not cut every stream of the node (nor, in an outage every node sees, every
// stream of the cluster). From then on another node may claim it and write the run.failed of
// its executions, which this node, cut off from the store, may never see: a stream held here
// would carry keep-alives while the truth is elsewhere, until the network heals and the fence
// lands, however long that takes. A tail of another node's execution is no better: it reads a
// store this node cannot reach. The lapse is also the moment this node refuses new work, so a
// client that reconnects through the balancer is sent elsewhere; /readyz failed already at the
// first unanswered renewal.

// Lapsed is closed once this node can no longer vouch for its lease (Sure turned false): every
// subscription that took it ends. Once the node can vouch again, a fresh channel is handed out.
func (c *Cluster) Lapsed() <-chan struct{} {
	c.held.mu.Lock()
	defer c.held.mu.Unlock()
	if c.held.lapsed == nil {
		c.held.lapsed = make(chan struct{})
	}
	return c.held.lapsed
}

// lapseLocked closes the lapse channel unless it is closed already; true when it closed it.
// The caller holds held.mu.
func (c *Cluster) lapseLocked() bool {
	if c.held.lapsedClosed {
		return false
	}
	if c.held.lapsed == nil {
		c.held.lapsed = make(chan struct{})
	}
	close(c.held.lapsed)
	c.held.lapsedClosed = true
	return true
}

// vouchAgainLocked hands out a fresh lapse channel once the node can vouch again (a renewal or
// a new epoch); true when the previous one had lapsed. The caller holds held.mu.
func (c *Cluster) vouchAgainLocked() bool {
	if !c.held.lapsedClosed {
		return false
	}
	c.held.lapsed, c.held.lapsedClosed = make(chan struct{}), false
	return true
}

// lapseLoop closes the lapse channel when a lease has passed since the last renewal, at that
// moment rather than at the next renewal attempt: a renewal may itself wait up to a third of
// the lease for a silent store.
func (c *Cluster) lapseLoop(stop <-chan struct{}) {
	timer := time.NewTimer(c.checkLapse())
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
		case <-stop:
			return
		}
		timer.Reset(c.checkLapse())
	}
}

// checkLapse closes the lapse channel if this node can no longer vouch for its lease, and
// returns when to look again: when the lease runs out if it still holds, else after a third of
// the lease (a renewal meanwhile hands out a fresh channel; the next lapse is a lease after it).
func (c *Cluster) checkLapse() time.Duration {
	c.held.mu.Lock()
	since := time.Since(c.held.renewed)
	if c.held.epoch != 0 && since < c.lease {
		c.held.mu.Unlock()
		return c.lease - since
	}
	if !c.held.lapsedClosed {
		// Logged before the lapse takes effect (under the lock, once per lapse): whoever sees
		// a stream end or a 503 because of it finds the reason already in the log.
		c.log.Error("this node cannot vouch for its lease (no renewal for a whole lease): it refuses new work and ends its event streams, which clients resume on another node",
			"node", c.node, "last_renewal", since.Round(time.Millisecond).String())
		c.lapseLocked()
	}
	c.held.mu.Unlock()
	return c.lease / 3
}
