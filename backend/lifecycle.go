package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/harness-edge/harness-edge/backend/approvals"
	"github.com/harness-edge/harness-edge/backend/store"
)

// The runtime's lifecycle: Open (take the store, join the cluster, recover and resume what the
// previous process left, start the loops) and Close (the reverse, bounded by CancelTimeout).

// Open opens the runtime over opts.Store (required; package local opens a runtime over a
// bbolt store in a directory), fails every execution the previous process of this node left unfinished (one
// run.failed each), and starts the retention sweep when opts.Retention is set. The runtime owns
// the store from here: Close closes it, and so does an Open that fails.
func Open(opts Options) (_ *Runtime, err error) {
	namedNode := opts.Node
	opts = opts.withDefaults()
	baseCtx, stopAll := context.WithCancelCause(context.Background())
	r := &Runtime{
		opts:         opts,
		log:          opts.Logger,
		storeErrors:  newBurstLogger(opts.Logger, storeErrorLogWindow),
		damage:       newDamageReports(opts.Logger, opts.Observer),
		observer:     opts.Observer,
		live:         newLiveExecutions(),
		baseCtx:      baseCtx,
		stopAll:      stopAll,
		hotWindow:    defaultHotWindow,
		finishedLogs: newFinishedLogs(finishedCacheBytes),
		node:         opts.Node,
		resumed:      make(chan struct{}),
	}
	r.providerRegistry = newProviderRegistry(opts.Name, opts.Version)
	r.stranded = newStrandedExecutions(r)
	r.log = slog.New(ExecutionLogHandler(opts.Logger.Handler(), r.logFields)) // tracing_log.go
	r.spans = newExecutionSpans(opts.TracerProvider)
	defer func() {
		if err != nil {
			r.abandonOpen()
		}
	}()
	if err := r.SetProviders(opts.Providers); err != nil {
		return nil, err
	}
	configuredRules, err := opts.Approvals.configuredRules(r.hasProvider, now())
	if err != nil {
		return nil, fmt.Errorf("backend: %w", err)
	}
	st := opts.Store
	if st == nil {
		return nil, errors.New("backend: Options.Store is required (package local opens the default, a bbolt store in a directory)")
	}
	r.store = st
	r.conversationDesk = &conversationDesk{store: st, open: r.checkOpen, log: r.log,
		forgetters: r.conversationForgetters}
	r.conversationEraser = &conversationEraser{store: st, open: r.checkOpen, log: r.log,
		conversations: r.conversationDesk, finishedLogs: r.finishedLogs, locate: r.locate,
		track: r.track, cancelTimeout: opts.CancelTimeout}
	r.usageDesk = &usageDesk{store: st, open: r.checkOpen, budgets: opts.Budgets}
	r.approvals = &ApprovalDesk{store: st, open: r.checkOpen, conversations: r.conversationDesk,
		knownProvider: r.hasProvider, undecodable: r.damage.reportUndecodable, configured: configuredRules}
	if c, ok := st.(store.Cluster); ok {
		// The store leases and routes commands for the node it was opened as: the runtime
		// records that name as the Owner, and refuses to run under another one.
		if namedNode != "" && namedNode != c.Node() {
			return nil, fmt.Errorf("backend: Options.Node is %q but the shared store was opened for node %q", namedNode, c.Node())
		}
		if opts.Cluster == nil {
			return nil, errors.New("backend: the store is shared by several nodes: Options.Cluster is required (package backend/cluster)")
		}
		r.cluster, r.node = opts.Cluster, c.Node()
	} else if opts.Cluster != nil {
		return nil, errors.New("backend: Options.Cluster is set but the store is not shared by several nodes (store.Cluster)")
	}
	if r.cluster != nil {
		if err := r.cluster.Join(clusterHost{r}); err != nil {
			return nil, fmt.Errorf("backend: join the cluster: %w", err)
		}
	}
	if err := openStreamHub(r, st); err != nil { // before recovery: its run.failed events are logged too
		return nil, err
	}
	if opts.Webhooks != nil {
		// Before recovery: the run.failed it commits is notified like any other.
		r.webhooks = opts.Webhooks
		st.SetOutboxPlanner(r.webhooks)
	}
	resumable, err := r.resumableExecutions()
	if err != nil {
		return nil, fmt.Errorf("backend: find resumable executions: %w", err)
	}
	resumed := make(map[string]bool, len(resumable))
	for _, rec := range resumable {
		resumed[rec.Execution.ID] = true
	}
	recovered, err := recoverUnfinished(st, r.leaseEpoch(), time.Now(), func(rec store.Execution) bool {
		return resumed[rec.Execution.ID] || !r.ownedHere(rec) // another node's are its own business
	}, r.damage.reportUndecodable)
	if err != nil {
		return nil, fmt.Errorf("backend: recover unfinished executions: %w", err)
	}
	if recovered > 0 {
		r.log.Warn("failed executions left unfinished by the previous process", "count", recovered)
	}
	r.lateLoops.Go("stranded", r.stranded.loop)
	if r.webhooks != nil {
		r.webhooks.Start(st)
	}

	for _, rec := range resumable {
		if err := r.resumeExecution(rec); err != nil {
			// Left unfinished in the store: the next Open tries again.
			r.log.Error("resume execution", "execution", rec.Execution.ID, "err", err)
		}
	}
	close(r.resumed)
	if r.cluster != nil {
		r.cluster.Start()
	}
	// After recovery, which ended what this node left running: the deletes it (or another
	// node) sealed and did not finish (conversationseal.go).
	if n, err := r.finishSealed(); err != nil {
		r.log.Error("finish sealed conversations", "err", err, "erased", n)
	}
	// After resumption: the deadlines of the actions resumed executions wait on are read from
	// the store like every other (expiryhost.go).
	r.approvals.expiry = approvals.NewExpiry(st, expiryHost{r}, r.log, opts.Approvals.ExpiryPoll)
	r.loops.Go("expiry", r.approvals.expiry.Run)
	if opts.Retention > 0 {
		sweep := retentionSweep{r, opts.Retention}
		if _, err := sweep.sweepExpired(time.Now()); err != nil {
			r.log.Error("retention sweep", "err", err)
		}
		r.loops.Go("retention", sweep.loop)
	}
	return r, nil
}

// abandonOpen undoes what a failing Open did, which is never more than taking the cluster
// lease (no loop has started yet): the lease is kept, as by Close, and the store handed to
// Open is closed, as the runtime owned it.
func (r *Runtime) abandonOpen() {
	r.stopAll(errRuntimeClosing)
	if r.cluster != nil {
		r.cluster.Stop()
	}
	r.loops.Stop()
	if r.streams != nil {
		r.streams.Close()
	}
	closeInjected(r.opts.Store)
}

// Close stops accepting work, cancels running providers (their executions are failed by recovery
// on the next Open), ends subscriptions and closes the store. Waiting for providers to return is
// bounded by CancelTimeout. Safe to call more than once.
func (r *Runtime) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	live := r.live.close()

	r.stopAll(errRuntimeClosing)
	for _, x := range live {
		x.closeSubscriptions(ErrClosed)
	}
	if r.streams != nil {
		r.streams.Close()
	}
	if r.cluster != nil {
		r.cluster.Stop() // before the runtime's loops: its tails and loops end first
	}
	r.loops.Stop()
	done := make(chan struct{})
	go func() { r.work.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(r.opts.CancelTimeout):
		r.log.Warn("closing with providers still running", "timeout", r.opts.CancelTimeout)
	}
	r.lateLoops.Stop()
	r.stranded.failClosed()
	if r.webhooks != nil {
		r.webhooks.Stop() // before the store closes: outcomes in hand are committed
	}
	err := r.store.Close()
	r.storeErrors.Stop()
	return err
}
