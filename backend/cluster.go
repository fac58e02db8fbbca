package backend

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
)

// Several nodes, one runtime (docs/scale-out.md). Everything in the cluster_*.go files runs only
// when Options.Store implements store.Cluster; a single-node store (bbolt) never reaches it.
//
//   - Ownership. The node that starts an execution owns it (store.Execution.Owner): it runs the
//     provider and is the only writer of its events and record, with the single-node code.
//   - Reads anywhere. A node that does not own an execution serves its record, events and
//     artifacts from the store, which holds only what was committed: nothing visible can be
//     taken back, exactly as on one node.
//   - Reads on the owner are never older than what another node showed: they wait for the
//     commits in flight to be published (cluster_fresh.go).
//   - Live streams anywhere. A subscription to another node's execution follows the store (a
//     remoteTail shared by every subscription of the node), woken by the owner's commit
//     notices and, should one be missed, by a poll: a missed notice only delays.
//   - Commands. :cancel and :respond arriving at another node travel to the owner as command
//     rows; the owner runs them through the single-node code path and answers, so every cancel
//     of an execution joins one single flight and every answer to an action meets the same lock.
//   - Leases (cluster_lease.go). Each node holds a lease with an epoch, renewed on its own
//     schedule whatever else the node does; a node whose lease expired is declared dead by the
//     first node to claim it, which takes its unfinished executions over: it resumes those
//     whose provider can re-attach (Resumer) and becomes their owner, and fails the others (one
//     run.failed each, naming the node, as restart recovery does), many per commit.
//   - Fencing. Every batch of an execution carries the lease epoch it runs under
//     (store.Batch.Lease) and the store applies it only while the node still holds that epoch:
//     once claimed, a node commits nothing more, and learns it from store.ErrFenced (on a
//     commit or a renewal). It then drops what it ran under that epoch, ends their streams
//     (clients resume by cursor, from the store: the claimer's run.failed) and takes a new
//     epoch. A node that cannot vouch for its lease (no renewal within a lease) refuses new
//     work with UNAVAILABLE and serves reads from the store, until it renews or is fenced.
//   - Close leaves this node's unfinished executions to its next Open (recovery) or, if it does
//     not come back within the lease, to the node that claims it.

// Cluster defaults.
const (
	// DefaultLease is how long a node's lease lasts without renewal (Options.Lease): about how
	// long a dead node's executions wait before another node takes them over (plus up to a
	// third of it, the other nodes' renewal tick). Renewed every third of it.
	DefaultLease = 15 * time.Second
	// defaultClusterPoll bounds how long a missed notice can delay a waiter.
	defaultClusterPoll = time.Second
)

// msgNodeStopped is the error of an execution failed because the node that ran it stopped (its
// lease expired).
const msgNodeStopped = "Node %s stopped before the execution finished"

func nodeStoppedMessage(node string) string { return fmt.Sprintf(msgNodeStopped, node) }

// coordinator is the runtime's cluster side; nil on a single-node store.
type coordinator struct {
	store store.Cluster
	node  string
	lease time.Duration
	poll  time.Duration

	wake  *wakeups
	tails remoteTails

	commandsMu sync.Mutex
	inflight   map[int64]bool // commands being run here (PendingCommands lists them until answered)

	held leaseState    // the epoch and when it was last renewed (cluster_lease.go)
	kick chan struct{} // capacity 1: renew now (a commit was fenced)

	stopWatch func() // nil until startCoordinator
	// stop and ctx are the runtime's loops' stop signal (Runtime.loops): the cluster's loops,
	// its tails and their store calls end with it.
	stop <-chan struct{}
	ctx  context.Context
}

// joinCluster takes this node's lease. Called by Open before recovery: from then on no other
// node can take this node for dead and claim the executions that recovery fails or resumes
// here (a node whose lease ran out while it was down would otherwise race a claimer for them).
// A node without a lease row could never be declared dead at all.
func (r *Runtime) joinCluster() error {
	if r.cluster == nil {
		return nil
	}
	c := &coordinator{
		store:    r.cluster,
		node:     r.cluster.Node(),
		lease:    r.opts.Lease,
		poll:     r.opts.NoticePoll,
		wake:     newWakeups(),
		inflight: make(map[int64]bool),
		kick:     make(chan struct{}, 1),
		stop:     r.loops.Stopping(),
		ctx:      r.loops.Context(),
	}
	if err := c.acquire(); err != nil {
		return fmt.Errorf("take the node's lease: %w", err)
	}
	r.coord = c
	return nil
}

// startCoordinator starts listening to the other nodes, renewing the lease and running their
// commands. Called by Open once recovery and resumption are done, before anything is served.
func (r *Runtime) startCoordinator() {
	c := r.coord
	if c == nil {
		return
	}
	c.stopWatch = c.store.Watch(c.notice)
	r.loops.Go("cluster-poll", r.pollLoop)
	r.loops.Go("lease-renew", r.renewLoop)
	r.loops.Go("lease-takeover", r.takeoverLoop)
	r.loops.Go("cluster-commands", r.commandLoop)
	// Once stopping, every waiter looks again (and sees the runtime closing): those that are not
	// loops (a command's poster) would otherwise wait for the next notice.
	r.loops.Go("cluster-wake-on-stop", func(stop <-chan struct{}) {
		<-stop
		c.wake.wakeAll()
	})
}

// notice dispatches a wake-up from another node's (or this node's) commit. It runs on the
// store's listener and only closes channels.
func (c *coordinator) notice(n store.Notice) {
	if n.ExecutionID == "" && n.CommandID == 0 {
		// A catch-all (the store's listener reconnected: anything may have changed while it
		// was away): every waiter looks again.
		c.wake.wakeAll()
		return
	}
	switch n.Kind {
	case store.NoticeEvents:
		c.wake.wake(executionWakeKey(n.ExecutionID))
	case store.NoticeCommand:
		c.wake.wake(commandQueueWakeKey)
	case store.NoticeResult:
		c.wake.wake(commandWakeKey(n.CommandID))
	}
}

// stopLoops ends the runtime's loops (Close): on a shared store it first stops listening and
// ends the tails' subscriptions. The lease is not given up: this node's unfinished executions
// are failed by the next Open of this node or, when it does not come back, by another node
// once the lease expired.
func (r *Runtime) stopLoops() {
	if c := r.coord; c != nil && c.stopWatch != nil {
		c.stopWatch()
		r.closeTails()
	}
	r.loops.Stop()
}
