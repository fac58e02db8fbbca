// Package backend is the Harness Runtime API in-process: durable executions, their event logs,
// actions, artifacts, cancellation, idempotency and capability preflight, over a store it is
// given (package store's contract; package local opens the single-node default, a bbolt file).
// It knows nothing of HTTP (that is package proxy) and imports no store driver.
//
// Concurrency model. Each execution has two locks: writeMu serializes every change to it
// together with its store commit (so sequence order is commit order and each atomic unit of
// docs/protocol.md §16.1 is one critical section), and mu guards the in-memory view that
// readers and subscribers see, which is updated only after the commit succeeded. Subscribers
// wait on a channel that is closed and replaced on every append. Provider code never runs under
// either lock.
package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/harness-edge/harness-edge/backend/internal/loops"
	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// ProtocolVersion is the portable protocol version this runtime implements.
const ProtocolVersion = "2026-09-02"

// errRuntimeClosing is the cancellation cause of provider contexts when the runtime closes: the
// execution is left unfinished in the store and recovery fails it on the next Open.
var errRuntimeClosing = errors.New("runtime closing")

// Runtime is the protocol's engine. All methods are safe for concurrent use.
type Runtime struct {
	opts  Options
	store store.Store
	// cluster serves the other nodes when several share the store (Options.Cluster, package
	// backend/cluster; nil on bbolt); node is this runtime's name (Options.Node), the Owner of
	// the executions it starts on a shared store.
	cluster     Cluster
	node        string
	log         *slog.Logger
	storeErrors *burstLogger   // store failures repeat once per change while a disk is full
	damage      *damageReports // stored values that cannot be decoded (damaged.go)
	observer    Observer

	mu        sync.RWMutex
	closed    bool
	providers []registeredProvider // registration order
	byID      map[string]registeredProvider
	live      map[string]*execution // non-terminal executions (and the ones finishing right now)

	idempotencyLocks keyedMutex
	running          runningSlots       // each tenant's non-terminal executions (Tenant.MaxRunning)
	finishedLogs     *finishedLogs      // recently finished executions, served from memory
	conversations    knownConversations // owners of conversations seen, for starts (conversation_cache.go)

	baseCtx context.Context // parent of every provider context; cancelled by Close
	stopAll context.CancelCauseFunc
	work    sync.WaitGroup // provider runs and cancellation operations, awaited by Close

	// loops are the background loops Close stops first: retention and, on a shared store, the
	// cluster's (notices' poll, lease renewal, takeover, commands, tails). lateLoops stop once
	// providers returned and before the store closes: the stranded loop, which fails what their
	// last changes left stranded. One lifecycle each (package loops), stopped in that order.
	loops     loops.Group
	lateLoops loops.Group

	stranded *strandedExecutions // executions the store refused a change of (stranded.go)
	webhooks Webhooks            // nil without subscriptions (webhooks.go)
	// tracingOff: Options.TracerProvider is the no-op one (tracing.go).
	tracingOff bool

	// beforeRun, when set (tests only), runs at the start of every execution's goroutine, before
	// the queued → running step: it lets a test act while an execution is certainly queued.
	beforeRun func(executionID string)
	hotWindow int // defaultHotWindow; smaller in tests so the store fallback is exercised
}

type registeredProvider struct {
	provider Provider
	manifest api.ProviderManifest // validated private copy, read once at registration
}

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
		live:         make(map[string]*execution),
		baseCtx:      baseCtx,
		stopAll:      stopAll,
		hotWindow:    defaultHotWindow,
		finishedLogs: newFinishedLogs(finishedCacheBytes),
		stranded:     newStrandedExecutions(),
		node:         opts.Node,
	}
	r.log = slog.New(ExecutionLogHandler(opts.Logger.Handler(), r.logFields)) // tracing_log.go
	r.tracingOff = isNoopTracerProvider(opts.TracerProvider)
	defer func() {
		if err != nil {
			r.abandonOpen()
		}
	}()
	if err := r.SetProviders(opts.Providers); err != nil {
		return nil, err
	}
	st := opts.Store
	if st == nil {
		return nil, errors.New("backend: Options.Store is required (package local opens the default, a bbolt store in a directory)")
	}
	r.store = st
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
	}, r.reportUndecodable)
	if err != nil {
		return nil, fmt.Errorf("backend: recover unfinished executions: %w", err)
	}
	if recovered > 0 {
		r.log.Warn("failed executions left unfinished by the previous process", "count", recovered)
	}
	r.lateLoops.Go("stranded", r.strandedLoop)
	if r.webhooks != nil {
		r.webhooks.Start(st)
	}

	for _, rec := range resumable {
		if err := r.resumeExecution(rec); err != nil {
			// Left unfinished in the store: the next Open tries again.
			r.log.Error("resume execution", "execution", rec.Execution.ID, "err", err)
		}
	}
	if r.cluster != nil {
		r.cluster.Start()
	}
	if opts.Retention > 0 {
		if _, err := r.sweepExpired(time.Now()); err != nil {
			r.log.Error("retention sweep", "err", err)
		}
		r.loops.Go("retention", r.retentionLoop)
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
	live := make([]*execution, 0, len(r.live))
	for _, x := range r.live {
		live = append(live, x)
	}
	r.mu.Unlock()

	r.stopAll(errRuntimeClosing)
	for _, x := range live {
		x.closeSubscriptions()
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
	r.failClosedStranded()
	if r.webhooks != nil {
		r.webhooks.Stop() // before the store closes: outcomes in hand are committed
	}
	err := r.store.Close()
	r.storeErrors.Stop()
	return err
}

// track runs fn in a goroutine that Close waits for; false when the runtime is closed.
func (r *Runtime) track(fn func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.work.Add(1) // under mu, so never concurrent with the Wait that Close starts after closing
	go func() {
		defer r.work.Done()
		fn()
	}()
	return true
}

func (r *Runtime) checkOpen() error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return ErrClosed
	}
	return nil
}

// SetProviders atomically replaces the registry (Caddy reloads call it); running executions keep
// the provider instance they started with. Duplicate id → *Error INVALID_STATE
// "Provider already registered: {id}"; invalid manifest → *Error VALIDATION_ERROR.
func (r *Runtime) SetProviders(ps []Provider) error {
	// Manifests are read before taking the lock: provider code never runs under a runtime lock.
	regs := make([]registeredProvider, 0, len(ps))
	byID := make(map[string]registeredProvider, len(ps))
	for i, p := range ps {
		if p == nil {
			return newError(CodeValidation, "Provider %d is nil", i)
		}
		m := cloneManifest(p.Manifest())
		if err := validateManifest(m); err != nil {
			return err
		}
		if _, dup := byID[m.ID]; dup {
			return newError(CodeInvalidState, "Provider already registered: %s", m.ID)
		}
		reg := registeredProvider{provider: p, manifest: m}
		regs = append(regs, reg)
		byID[m.ID] = reg
	}
	r.mu.Lock()
	r.providers, r.byID = regs, byID
	r.mu.Unlock()
	return nil
}

func (r *Runtime) provider(id string) (registeredProvider, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	reg, ok := r.byID[id]
	return reg, ok
}

// Describe returns the runtime identity and the manifests in registration order.
func (r *Runtime) Describe() api.RuntimeDescription {
	return api.RuntimeDescription{
		Name:            r.opts.Name,
		Version:         r.opts.Version,
		ProtocolVersion: api.RuntimeDescriptionProtocolVersionN20260902,
		Providers:       r.Capabilities(),
	}
}

// Capabilities returns copies of the registered manifests in registration order.
func (r *Runtime) Capabilities() []api.ProviderManifest {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]api.ProviderManifest, len(r.providers))
	for i, reg := range r.providers {
		out[i] = cloneManifest(reg.manifest)
	}
	return out
}

// enterLive puts x in the live map; false when the runtime is closed (Close stops what the
// map holds, so nothing may enter it after).
func (r *Runtime) enterLive(x *execution) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.live[x.id] = x
	return true
}

// leaveLive takes x out of the live map, if it is still there.
func (r *Runtime) leaveLive(x *execution) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.live[x.id] == x {
		delete(r.live, x.id)
	}
}

// liveExecution returns the in-memory execution, or nil when it is not live (terminal, or unknown).
func (r *Runtime) liveExecution(id string) *execution {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.live[id]
}

// reportUndecodable reports a stored execution record that cannot be decoded (recovery,
// retention and listings skip it; reads of it answer INTERNAL_ERROR), or a damaged event a walk
// met: logged once, with the id that lets an operator find it; docs/operations.md says what to
// do.
func (r *Runtime) reportUndecodable(id string, err error) {
	kind := DamagedExecution
	if errors.As(err, new(damagedEventError)) {
		kind = DamagedEvent
	}
	r.damage.report(kind, id, err)
}

// leaseEpoch is the epoch of this node's cluster lease, the fencing token of the batches it
// writes for executions it owns (0 on a single-node store).
func (r *Runtime) leaseEpoch() int64 {
	if r.cluster == nil {
		return 0
	}
	return r.cluster.Epoch()
}

// ownedHere reports whether rec is this node's to run, resume or fail: always on a single-node
// store; on a shared one only when this node started it.
func (r *Runtime) ownedHere(rec store.Execution) bool {
	return r.cluster == nil || rec.Owner == r.node
}

// closeInjected closes a store handed to an Open that fails before the runtime took it over.
func closeInjected(st store.Store) {
	if st != nil {
		_ = st.Close()
	}
}

// storeError maps a failed commit to what the caller sees.
func storeError(op string, err error) error {
	if errors.Is(err, store.ErrClosed) {
		return ErrClosed
	}
	return internalError(op, err)
}
