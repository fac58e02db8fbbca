package backend

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/harness-edge/harness-edge/backend/internal/hotwindow"

	"go.opentelemetry.io/otel/trace"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// defaultHotWindow bounds the recent events a live execution keeps in memory for its
// subscribers; older ones are read back from the store (they were committed before they were
// ever visible).
const defaultHotWindow = 4096

// execution is the in-memory state of a live execution. See the package comment for the roles
// of writeMu and mu.
type execution struct {
	rt             *Runtime // the runtime it runs in
	id             string
	conversationID string
	input          string
	providerID     string
	config         api.JSONObject // effectiveConfig; immutable, copied for the provider
	provider       Provider       // the instance it started with, whatever SetProviders does later
	// resumedCheckpoint is the provider checkpoint found in the store when a restart resumed
	// the execution (resume.go); nil for an execution started by this process.
	resumedCheckpoint []byte
	span              trace.Span // the execution's span (tracing.go); nil when not attached
	logTenant         string     // the tenant, for log lines (tracing_log.go); set with span

	runCtx  context.Context // given to the provider; cancelled on cancellation, failure or Close
	stopRun context.CancelCauseFunc
	// admitted is closed once the start is settled: the queued record committed and the
	// execution in the live map, or the start failed. The provider may run before that (its
	// changes are queued behind the record), but the execution only finishes after it.
	admitted chan struct{}

	writeMu sync.Mutex
	// Owned by writers (writeMu held).
	artifactIDs map[string]struct{}
	pending     *pendingAction
	opened      *pendingAction // the last action opened, kept after it is answered (awaitAction)
	cancelling  *cancelOperation
	// wrec and nextSeq are the writers' view: the record and the last sequence as of the last
	// change submitted to the store. They run ahead of rec and log while a submitted change
	// waits for its group commit.
	wrec    store.Execution
	nextSeq int64
	// streamScope is what the conversation and tenant streams select its events by, shared
	// by all of them (store.StoredEvent.Scope): scope, set at its first event.
	streamScope *store.StreamScope
	scope       store.StreamScope
	eventBytes  int64       // JSON bytes of the events up to nextSeq (the per-execution limit)
	chain       store.Chain // this execution's failure domain in the store's commit queue; failed = stranded
	// lease is the epoch of this node's cluster lease the execution runs under (0 on a
	// single-node store): every batch of it carries it, and the store refuses them once another
	// node claimed that epoch (fencing.go).
	lease int64
	// strandReported makes the first failure of the chain the one that strands the execution
	// (see stranded.go); later failures of the same chain are the same event.
	strandReported atomic.Bool
	usage          usageState // what its usage reports did (usagereports.go)

	mu sync.RWMutex // readers (snapshots, subscriptions waking up together) share it
	// The published view, guarded by mu: only what is committed. rec and log are updated (on
	// the store's commit goroutine) once a change is durable, in submission order.
	rec     store.Execution
	log     hotwindow.Window // the log's end (log.Last) and its newest events, for readers
	changed chan struct{}    // closed and replaced on every append: the wake-up for subscribers
	// left says why this process left the execution (nil while it is here): the runtime closed
	// (ErrClosed) or another node claimed it (fenced: UNAVAILABLE, as for a lapsed lease, since
	// another node serves it). Subscriptions end with it.
	left error
	// settled counts the submitted changes whose commit has ended (durable and published, or
	// failed), in submission order; settledCh is closed and replaced each time. submitted
	// counts the submissions (written under writeMu). See awaitSettled (settled.go).
	settled   int64
	settledCh chan struct{}
	submitted atomic.Int64
}

func newExecution(r *Runtime, rec store.Execution, p Provider) *execution {
	ctx, stop := context.WithCancelCause(r.baseCtx)
	e := rec.Execution
	var lease int64
	if r.cluster != nil {
		lease = r.cluster.Epoch()
	}
	return &execution{
		rt:             r,
		lease:          lease,
		id:             e.ID,
		conversationID: e.ConversationID,
		input:          e.Input,
		providerID:     e.ProviderID,
		config:         e.EffectiveConfig,
		provider:       p,
		runCtx:         ctx,
		stopRun:        stop,
		admitted:       make(chan struct{}),
		artifactIDs:    make(map[string]struct{}),
		wrec:           rec,
		rec:            rec,
		log:            hotwindow.New(r.hotWindow, 0),
		changed:        make(chan struct{}),
		settledCh:      make(chan struct{}),
	}
}

// isTerminalState is harness.yaml's x-terminal, generated into package api.
func isTerminalState(s api.ExecutionState) bool { return s.Terminal() }

// state is the writers' current state (the last submitted); callers hold writeMu.
func (x *execution) state() api.ExecutionState { return x.wrec.Execution.State }

// snapshot returns a copy of the published (committed) wire object that shares nothing with
// the runtime.
func (x *execution) snapshot() api.Execution {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return cloneExecution(x.rec.Execution)
}

// CloneExecution is a deep copy of e: nothing of it is shared with the original.
func CloneExecution(e api.Execution) api.Execution { return cloneExecution(e) }

func cloneExecution(e api.Execution) api.Execution {
	out := e
	out.RequiredCapabilities = slices.Clone(e.RequiredCapabilities)
	if out.RequiredCapabilities == nil {
		out.RequiredCapabilities = []string{}
	}
	out.EffectiveConfig = deepCopyObject(e.EffectiveConfig)
	if out.EffectiveConfig == nil {
		out.EffectiveConfig = api.JSONObject{}
	}
	out.StartedAt = clonePtr(e.StartedAt)
	out.EndedAt = clonePtr(e.EndedAt)
	out.FinalOutput = clonePtr(e.FinalOutput)
	out.Usage = cloneUsage(e.Usage)
	if e.Error != nil {
		errCopy := *e.Error
		out.Error = &errCopy
	}
	if e.PendingAction != nil {
		action := *e.PendingAction
		action.Description = clonePtr(action.Description)
		action.Payload = deepCopyObject(action.Payload)
		out.PendingAction = &action
	}
	return out
}

// cloneUsage is a deep copy of a snapshot's usage (its counts are pointers).
func cloneUsage(u *api.Usage) *api.Usage {
	if u == nil {
		return nil
	}
	out := api.Usage{
		InputTokens: clonePtr(u.InputTokens), OutputTokens: clonePtr(u.OutputTokens),
		CachedReadTokens: clonePtr(u.CachedReadTokens), CachedWriteTokens: clonePtr(u.CachedWriteTokens),
		ThoughtTokens: clonePtr(u.ThoughtTokens), TotalTokens: clonePtr(u.TotalTokens),
		ContextSize: clonePtr(u.ContextSize), ContextUsed: clonePtr(u.ContextUsed), Cost: clonePtr(u.Cost),
	}
	return &out
}

// pendingAction is the one action a provider is waiting on (docs/protocol.md §7.1).
type pendingAction struct {
	id      string
	request api.ActionRequest // as stored; rewritten with a new status when resolved or abandoned
	reply   chan actionReply  // buffered: answering never blocks the answerer
}

type actionReply struct {
	response api.ActionResponse
	err      error
}

// reject fails the provider's RequestAction with message; nil-safe.
func (p *pendingAction) reject(message string) {
	if p != nil {
		p.reply <- actionReply{err: providerError(message)}
	}
}

// cancelOperation is the single flight of one execution's cancellation: the first caller starts
// it, everyone (the first caller included) waits for done and gets the same result.
type cancelOperation struct {
	done   chan struct{}
	once   sync.Once
	result api.Execution
	err    error
	actor  *api.Actor // who started it (actor.go); nil when nobody was named
}

func newCancelOperation() *cancelOperation { return &cancelOperation{done: make(chan struct{})} }

// finish settles the operation; only the first call counts (the cancellation's own end, or the
// failure of a stranded execution, whichever comes first).
func (op *cancelOperation) finish(result api.Execution, err error) {
	op.once.Do(func() {
		op.result, op.err = result, err
		close(op.done)
	})
}

// actionRecord is the stored form of req with where it comes from (the inbox lists by it).
func (x *execution) actionRecord(req api.ActionRequest, status store.ActionStatus) store.Action {
	return store.Action{Request: req, Status: status, Tenant: x.wrec.Tenant, ConversationID: x.conversationID, ProviderID: x.providerID}
}
