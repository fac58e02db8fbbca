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
	"github.com/harness-edge/harness-edge/backend/streams"
	"log/slog"
	"sync"

	"github.com/harness-edge/harness-edge/backend/internal/loops"
	"github.com/harness-edge/harness-edge/backend/store"
)

// errRuntimeClosing is the cancellation cause of provider contexts when the runtime closes: the
// execution is left unfinished in the store and recovery fails it on the next Open.
var errRuntimeClosing = errors.New("runtime closing")

// ErrClosed is returned by every call made after Close (and by Subscription.Read once the runtime
// closes underneath it).
var ErrClosed = &Error{Code: CodeInternal, Message: "Runtime is closed"}

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
	streams     *streams.Hub   // the conversation and tenant streams (streamhub.go); nil without a stream log
	damage      *damageReports // stored values that cannot be decoded (damaged.go)
	observer    Observer

	mu     sync.RWMutex // guards closed
	closed bool

	// The desks: each owns one part of the runtime's work and its state, and is given by Open
	// what it needs of the rest (never the Runtime itself). The embedded ones lend the runtime
	// their API; the approvals are reached through Approvals.
	approvals *ApprovalDesk // the inbox, standing rules and expiry (approvaldesk.go)

	*providerRegistry   // SetProviders, Describe, Capabilities (registry.go)
	*conversationDesk   // CreateConversation, GetConversation (conversationdesk.go)
	*conversationEraser // DeleteConversation (conversationeraser.go)
	*usageDesk          // Usage, and what a start must fit in (usagedesk.go)

	live *liveExecutions // running here, and finishing right now (live.go)

	idempotencyLocks keyedMutex
	running          runningSlots  // each tenant's non-terminal executions (Tenant.MaxRunning)
	finishedLogs     *finishedLogs // recently finished executions, served from memory

	// resumed is closed once Open has made every execution it resumes live: an execution that
	// waits for its turn (turns.go) waits for it first, so that what it waits for is found.
	resumed chan struct{}

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
	spans    executionSpans      // the executions' spans (tracing.go)

	// beforeRun, when set (tests only), runs at the start of every execution's goroutine, before
	// the queued → running step: it lets a test act while an execution is certainly queued.
	beforeRun func(executionID string)
	hotWindow int // defaultHotWindow; smaller in tests so the store fallback is exercised
}

// Approvals is the runtime's inbox and standing rules.
func (r *Runtime) Approvals() *ApprovalDesk { return r.approvals }

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
