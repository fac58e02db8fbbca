package backend

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

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
	// change submitted to the store. They run ahead of rec and lastSeq while a submitted change
	// waits for its group commit.
	wrec       store.Execution
	nextSeq    int64
	eventBytes int64       // JSON bytes of the events up to nextSeq (the per-execution limit)
	chain      store.Chain // this execution's failure domain in the store's commit queue; failed = stranded
	// lease is the epoch of this node's cluster lease the execution runs under (0 on a
	// single-node store): every batch of it carries it, and the store refuses them once another
	// node claimed that epoch (fencing.go).
	lease int64
	// strandReported makes the first failure of the chain the one that strands the execution
	// (see stranded.go); later failures of the same chain are the same event.
	strandReported atomic.Bool

	mu sync.RWMutex // readers (snapshots, subscriptions waking up together) share it
	// The published view, guarded by mu: only what is committed. rec and lastSeq are updated
	// (on the store's commit goroutine) once a change is durable, in submission order.
	rec       store.Execution
	lastSeq   int64
	hot       []Event // the most recent events; hot[0].Sequence == hotStart
	hotStart  int64
	hotBytes  int // total JSON bytes in hot
	hotWindow int
	changed   chan struct{} // closed and replaced on every append: the wake-up for subscribers
	closed    bool          // the runtime closed; subscriptions end with ErrClosed
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
		hotStart:       1,
		hotWindow:      r.hotWindow,
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

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// change is one atomic unit of docs/protocol.md §16.1: everything in it is committed in one
// store transaction and then published to readers at once.
type change struct {
	at          api.Timestamp    // event time (and the record's updatedAt when it changes)
	rec         *store.Execution // the new record, nil when the state does not change
	events      []newEvent
	actions     []store.Action
	artifacts   []store.Artifact
	idempotency []store.Idempotency
	// byProvider marks a provider's emission: refused when it would take the execution past
	// its event limits (limits.go). Lifecycle events are never refused, so an execution can
	// always end.
	byProvider bool

	checkpoint []byte // the provider's checkpoint, committed with the rest; nil: unchanged
	// deadline, when set, bounds the wait for the commit (store.Request.Deadline): a start's,
	// on a shared store, so a stalled database answers its caller UNAVAILABLE in bounded time.
	deadline time.Time
}

// commit submits c and waits until it is durable and published: the lifecycle transitions
// whose outcome a caller is told (respond, cancel, the terminal state) and those a provider
// waits on (action requests). The caller holds x.writeMu. On failure nothing of c happened; if
// the store refused it, the execution is stranded (stranded.go).
func (x *execution) commit(c change) error {
	prevRec, prevSeq, prevBytes := x.wrec, x.nextSeq, x.eventBytes
	done, err := x.submit(c)
	if err != nil {
		return err
	}
	if err := <-done; err != nil {
		// Nothing of c is durable or visible, and nothing was submitted after it (writeMu is
		// held): the writers' view goes back to where it was.
		x.wrec, x.nextSeq, x.eventBytes = prevRec, prevSeq, prevBytes
		return storeError("commit execution change", err)
	}
	return nil
}

// enqueue submits c and returns without waiting for the commit: provider emissions. The events
// become visible to readers and subscribers only once their group commit is durable (nothing a
// caller can observe is ever uncommitted); a later change of the same execution is committed
// after it. A failed commit fails every later change of the execution (no gap can appear in its
// sequences) and strands it: the provider learns it from its context and at its next emission.
// The caller holds x.writeMu.
func (x *execution) enqueue(c change) error {
	_, err := x.submitChange(c, false)
	return err
}

// submit hands c to the store's group commit and returns a channel that receives the outcome
// once c is durable and published (or failed). Sequences are assigned here, under x.writeMu,
// so submission order, sequence order, commit order and publication order are all the same.
// Once a change of the execution failed, every later one fails too (see store.Chain).
func (x *execution) submit(c change) (<-chan error, error) {
	return x.submitChange(c, true)
}

// submission holds, in one allocation, what a change needs from its submission to its commit:
// a provider's text delta is a change of its own, several per execution, and each used to
// allocate its batch, request and one-event slices separately.
type submission struct {
	batch  store.Batch
	req    store.Request
	events [1]Event             // the events, for a change of one event (the usual case)
	stored [1]store.StoredEvent // their stored form
}

// submitChange is submit; without wantDone (enqueue: the caller does not wait) no channel is
// made and the returned one is nil.
func (x *execution) submitChange(c change, wantDone bool) (<-chan error, error) {
	if err := x.chain.Err(); err != nil {
		return nil, storeError("commit execution change", err)
	}
	sub := &submission{batch: store.Batch{Actions: c.actions, Artifacts: c.artifacts, Idempotency: c.idempotency, Lease: x.lease}}
	batch := &sub.batch
	if c.checkpoint != nil {
		batch.Checkpoints = []store.Checkpoint{{ExecutionID: x.id, Data: c.checkpoint}}
	}
	var published *store.Execution
	if c.rec != nil {
		recs := &[2]store.Execution{*c.rec, *c.rec} // the batch's, and the one published
		batch.Executions = recs[:1]
		published = &recs[1]
	}
	var events []Event
	seq, added := x.nextSeq, 0
	if len(c.events) > 0 {
		if len(c.events) == 1 {
			events, batch.Events = sub.events[:], sub.stored[:]
		} else {
			events = make([]Event, len(c.events))
			batch.Events = make([]store.StoredEvent, len(c.events))
		}
		for i, ne := range c.events {
			seq++
			events[i] = Event{Sequence: seq, Type: ne.typ, JSON: encodeEvent(x.id, seq, ne.typ, c.at, ne.data)}
			batch.Events[i] = store.StoredEvent{ExecutionID: x.id, Event: events[i]}
			added += len(events[i].JSON)
		}
	}
	if c.byProvider {
		if err := x.rt.checkEventLimits(seq, x.eventBytes+int64(added)); err != nil {
			return nil, err
		}
	}
	var done chan error
	if wantDone {
		done = make(chan error, 1)
	}
	n := x.submitted.Load() + 1 // this submission's number (writeMu is held: the only writer)
	req := &sub.req
	*req = store.Request{Batch: batch, Chain: &x.chain, Deadline: c.deadline}
	req.Done = func(err error) { // on the store's commit goroutine, in submission order
		if err == nil {
			x.publish(published, events)
			x.traceCommitted(published, events)
			if len(events) > 0 {
				x.rt.observer.EventsAppended(len(events))
			}
		} else if errors.Is(err, store.ErrConflict) {
			// Another node started the same idempotent request first: this execution never
			// existed (its start answers with the other one), nothing is owed to it.
			x.stopRun(err)
		} else {
			x.strand(err)
		}
		if x.rt.cluster != nil { // only awaitSettled, on shared stores, needs to know
			x.settle(n)
		}
		if done != nil {
			done <- err
		}
	}
	if err := x.rt.store.Submit(req); err != nil {
		return nil, storeError("commit execution change", err)
	}
	x.submitted.Store(n)
	x.nextSeq = seq
	x.eventBytes += int64(added)
	if c.rec != nil {
		x.wrec = *c.rec
	}
	return done, nil
}

// maxHotBytes bounds the JSON bytes of an execution's hot window, whatever the event count.
const maxHotBytes = 8 << 20

// publish updates the view readers see and wakes subscribers. Called on the store's commit
// goroutine once the change is durable.
//
// The wake-up (closing the old channel) comes after x.mu is released: every subscriber it wakes
// starts by taking x.mu for reading (Ready, Read), and woken while publish still held it, each
// would park again on the lock and wait to be woken a second time by Unlock: with 200
// subscribers on 2 cores that second round of scheduling was a third of the fan-out's wake-up
// delay (runtime/trace, scheduler latency profile). No wake-up is lost: a subscriber that takes
// x.mu after the swap sees the new lastSeq (Ready returns a closed channel), one that took it
// before holds the old channel, closed just below.
func (x *execution) publish(rec *store.Execution, events []Event) {
	x.mu.Lock()
	if rec != nil {
		x.rec = *rec
	}
	if len(events) == 0 {
		x.mu.Unlock()
		return
	}
	x.hot = append(x.hot, events...)
	for _, e := range events {
		x.hotBytes += len(e.JSON)
	}
	x.lastSeq = events[len(events)-1].Sequence
	if len(x.hot) > x.hotWindow || x.hotBytes > maxHotBytes {
		// Keep the newer half (by count and by bytes); older events are read from the store.
		drop := max(len(x.hot)-x.hotWindow/2, 0)
		dropped := 0
		for _, e := range x.hot[:drop] {
			dropped += len(e.JSON)
		}
		for drop < len(x.hot)-1 && x.hotBytes-dropped > maxHotBytes/2 {
			dropped += len(x.hot[drop].JSON)
			drop++
		}
		x.hot = slices.Clone(x.hot[drop:]) // a fresh array, so the dropped events can be collected
		x.hotStart += int64(drop)
		x.hotBytes -= dropped
	}
	changed := x.changed
	x.changed = make(chan struct{})
	x.mu.Unlock()
	close(changed)
}

// closeSubscriptions wakes every subscriber for the last time; their next Read reports ErrClosed.
// As in publish, the channel is closed once x.mu is released.
func (x *execution) closeSubscriptions() {
	x.endSpanLeft() // this process leaves the execution: its span so far is exported
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		return
	}
	x.closed = true
	changed := x.changed
	x.changed = make(chan struct{})
	x.mu.Unlock()
	close(changed)
}
