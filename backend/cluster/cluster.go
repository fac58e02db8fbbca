// Package cluster serves several nodes that share one store (a store.Cluster, such as
// PostgreSQL): it implements backend.Cluster, the side of the runtime that deals with the other
// nodes (docs/scale-out.md). A program that opens a runtime over a shared store hands it one:
//
//		rt, err := backend.Open(backend.Options{Store: pg, Cluster: cluster.New(pg, cluster.Options{})})
//
//	  - Ownership. The node that starts an execution owns it (store.Execution.Owner): it runs the
//	    provider and is the only writer of its events and record, with the single-node code.
//	  - Reads anywhere. A node that does not own an execution serves its record, events and
//	    artifacts from the store, which holds only what was committed: nothing visible can be
//	    taken back, exactly as on one node. (Reads on the owner are never older than what another
//	    node showed: the runtime waits for the commits in flight, backend/settled.go.)
//	  - Live streams anywhere (tail.go). A subscription to another node's execution follows the
//	    store (a tail shared by every subscription of the node), woken by the owner's commit
//	    notices and, should one be missed, by a poll: a missed notice only delays.
//	  - Commands (commands.go). :cancel and :respond arriving at another node travel to the owner
//	    as command rows; the owner runs them through the handle a local call gets and answers, so
//	    every cancel of an execution joins one single flight and every answer to an action meets
//	    the same lock.
//	  - Leases (lease.go). Each node holds a lease with an epoch, renewed on its own schedule
//	    whatever else the node does; a node whose lease expired is declared dead by the first
//	    node to claim it, which takes its unfinished executions over (backend's TakeOver: resumed
//	    when their provider can re-attach, else failed naming the node, many per commit).
//	  - Fencing. Every batch of an execution carries the lease epoch it runs under
//	    (store.Batch.Lease) and the store applies it only while the node still holds that epoch:
//	    once claimed, a node commits nothing more, and learns it from store.ErrFenced (on a
//	    commit or a renewal). It then drops what it ran under that epoch (ClusterHost.Fence),
//	    whose streams end (clients resume by cursor, from the store: the claimer's run.failed),
//	    and takes a new epoch. A node that cannot vouch for its lease (no renewal within a lease)
//	    refuses new work with UNAVAILABLE and serves reads from the store, until it renews or is
//	    fenced.
//	  - Stop leaves this node's unfinished executions to its next Open (recovery) or, if it does
//	    not come back within the lease, to the node that claims it.
package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/internal/loops"
	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/internal/logburst"
)

// Defaults of Options.
const (
	// DefaultLease is how long a node's lease lasts without renewal (Options.Lease): about how
	// long a dead node's executions wait before another node takes them over (plus up to a
	// third of it, the other nodes' renewal tick). Renewed every third of it.
	DefaultLease = 15 * time.Second
	// DefaultPoll bounds how long a missed notice can delay a waiter (Options.Poll).
	DefaultPoll = time.Second
)

// storeErrorLogWindow is how often a burst of identical store errors is summarised.
const storeErrorLogWindow = 10 * time.Second

// Options configure New.
type Options struct {
	// Lease is how long this node's lease lasts without renewal: when it expires (the node
	// died, or cannot reach the store), another node takes its unfinished executions over.
	// Renewed every third of it. Default DefaultLease.
	Lease time.Duration
	// Poll bounds how long a missed notice of the store can delay a stream or a command
	// waiting for another node: every waiter re-reads the store at least this often. Default
	// DefaultPoll.
	Poll time.Duration
}

// Cluster is one node's side of a shared store: its lease, the commands other nodes post for
// it, the tails of other nodes' executions it follows. It implements backend.Cluster.
type Cluster struct {
	store store.Cluster
	node  string
	lease time.Duration
	poll  time.Duration

	host        backend.ClusterHost // set by Join
	log         *slog.Logger
	storeErrors *logburst.Logger

	wake  *wakeups
	tails tails

	commandsMu sync.Mutex
	inflight   map[int64]bool // commands being run here (PendingCommands lists them until answered)

	held leaseState    // the epoch and when it was last renewed (lease.go)
	kick chan struct{} // capacity 1: renew now (a commit was fenced)

	loops     loops.Group
	stopWatch func() // nil until Start
}

var _ backend.Cluster = (*Cluster)(nil)

// New makes the cluster side of the node st was opened for.
func New(st store.Cluster, o Options) *Cluster {
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	return &Cluster{
		store:    st,
		node:     st.Node(),
		lease:    o.Lease,
		poll:     o.Poll,
		wake:     newWakeups(),
		inflight: make(map[int64]bool),
		kick:     make(chan struct{}, 1),
	}
}

// Join takes this node's lease for host's runtime.
func (c *Cluster) Join(host backend.ClusterHost) error {
	c.host = host
	c.log = host.Logger()
	c.storeErrors = logburst.New(c.log, storeErrorLogWindow)
	if err := c.acquire(); err != nil {
		return fmt.Errorf("take the node's lease: %w", err)
	}
	return nil
}

// Start starts listening to the other nodes, renewing the lease and running their commands.
func (c *Cluster) Start() {
	// Renewed once now: Join took the lease before recovery and resumption, which may have used
	// a good part of it, and the lapse watch (vouch.go) would otherwise find the node unable to
	// vouch for it before it served anything.
	c.renew()
	c.stopWatch = c.store.Watch(c.notice)
	c.loops.Go("cluster-poll", c.pollLoop)
	c.loops.Go("lease-renew", c.renewLoop)
	c.loops.Go("lease-lapse", c.lapseLoop)
	c.loops.Go("lease-takeover", c.takeoverLoop)
	c.loops.Go("cluster-commands", c.commandLoop)
	// Once stopping, every waiter looks again (and sees the runtime closing): those that are not
	// loops (a command's poster) would otherwise wait for the next notice.
	c.loops.Go("cluster-wake-on-stop", func(stop <-chan struct{}) {
		<-stop
		c.wake.wakeAll()
	})
}

// Stop stops listening, ends the tails' subscriptions and the loops. The lease is not given
// up.
func (c *Cluster) Stop() {
	if c.stopWatch != nil {
		c.stopWatch()
		c.closeTails()
	}
	c.loops.Stop()
	if c.storeErrors != nil {
		c.storeErrors.Stop()
	}
}

// Remote is the handle of an unfinished execution this node does not run.
func (c *Cluster) Remote(rec store.Execution) backend.Handle { return remoteHandle{c, rec} }

// ctx is the context of the cluster's store calls: it ends when Stop begins.
func (c *Cluster) ctx() context.Context { return c.loops.Context() }

// stopping is closed when Stop begins.
func (c *Cluster) stopping() <-chan struct{} { return c.loops.Stopping() }

// notice dispatches a wake-up from another node's (or this node's) commit. It runs on the
// store's listener and only closes channels.
func (c *Cluster) notice(n store.Notice) {
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
