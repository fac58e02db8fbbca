package backend

import (
	"context"
	"slices"
	"sync"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// defaultHotWindow bounds the recent events a live execution keeps in memory for its
// subscribers; older ones are read back from the store (they were committed before they were
// ever visible).
const defaultHotWindow = 4096

// execution is the in-memory state of a live execution. See the package comment for the roles
// of writeMu and mu.
type execution struct {
	id             string
	conversationID string
	input          string
	providerID     string
	config         api.JsonObject // effectiveConfig; immutable, copied for the provider
	provider       Provider       // the instance it started with, whatever SetProviders does later

	runCtx  context.Context // given to the provider; cancelled on cancellation, failure or Close
	stopRun context.CancelCauseFunc

	writeMu sync.Mutex
	// Owned by writers (writeMu held).
	artifactIDs map[string]struct{}
	pending     *pendingAction
	cancelling  *cancelOperation

	mu sync.Mutex
	// rec and lastSeq are written with both locks held, so writers may read them holding only
	// writeMu; everyone else takes mu.
	rec       executionRecord
	lastSeq   int64
	hot       []Event // the most recent events; hot[0].Sequence == hotStart
	hotStart  int64
	hotWindow int
	changed   chan struct{} // closed and replaced on every append: the wake-up for subscribers
	closed    bool          // the runtime closed; subscriptions end with ErrClosed
}

func newExecution(r *Runtime, rec executionRecord, p Provider) *execution {
	ctx, stop := context.WithCancelCause(r.baseCtx)
	e := rec.Execution
	return &execution{
		id:             e.Id,
		conversationID: e.ConversationId,
		input:          e.Input,
		providerID:     e.ProviderId,
		config:         e.EffectiveConfig,
		provider:       p,
		runCtx:         ctx,
		stopRun:        stop,
		artifactIDs:    make(map[string]struct{}),
		rec:            rec,
		hotStart:       1,
		hotWindow:      r.hotWindow,
		changed:        make(chan struct{}),
	}
}

func isTerminalState(s api.ExecutionState) bool {
	switch s {
	case api.ExecutionStateSucceeded, api.ExecutionStateFailed, api.ExecutionStateCancelled:
		return true
	}
	return false
}

// state is the current state; callers hold writeMu.
func (x *execution) state() api.ExecutionState { return x.rec.Execution.State }

// snapshot returns a copy of the wire object that shares nothing with the runtime.
func (x *execution) snapshot() api.Execution {
	x.mu.Lock()
	defer x.mu.Unlock()
	return cloneExecution(x.rec.Execution)
}

func cloneExecution(e api.Execution) api.Execution {
	out := e
	out.RequiredCapabilities = slices.Clone(e.RequiredCapabilities)
	if out.RequiredCapabilities == nil {
		out.RequiredCapabilities = []string{}
	}
	out.EffectiveConfig = deepCopyObject(e.EffectiveConfig)
	if out.EffectiveConfig == nil {
		out.EffectiveConfig = api.JsonObject{}
	}
	out.StartedAt = clonePtr(e.StartedAt)
	out.EndedAt = clonePtr(e.EndedAt)
	out.FinalOutput = clonePtr(e.FinalOutput)
	if e.Error != nil {
		errCopy := *e.Error
		out.Error = &errCopy
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

// change is one atomic unit of protocol-reference §16.1: everything in it is committed in one
// store transaction and then published to readers at once.
type change struct {
	at          api.Timestamp    // event time (and the record's updatedAt when it changes)
	rec         *executionRecord // the new record, nil when the state does not change
	events      []newEvent
	actions     []actionRecord
	artifacts   []storedArtifact
	idempotency []idempotencyRecord
}

// commit makes c durable and then visible. The caller holds x.writeMu, which is what makes
// sequence assignment, commit order and publication order the same.
func (r *Runtime) commit(x *execution, c change) error {
	batch := &storeBatch{actions: c.actions, artifacts: c.artifacts, idempotency: c.idempotency}
	if c.rec != nil {
		batch.executions = []executionRecord{*c.rec}
	}
	events := make([]Event, len(c.events))
	seq := x.lastSeq
	for i, ne := range c.events {
		seq++
		events[i] = Event{Sequence: seq, Type: ne.typ, JSON: encodeEvent(x.id, seq, ne.typ, c.at, ne.data)}
		batch.events = append(batch.events, storedEvent{executionID: x.id, event: events[i]})
	}
	if err := r.store.Commit(batch); err != nil {
		return storeError("commit execution change", err)
	}
	x.publish(c.rec, events)
	if len(events) > 0 {
		r.observer.EventsAppended(len(events))
	}
	return nil
}

// publish updates the view readers see and wakes subscribers.
func (x *execution) publish(rec *executionRecord, events []Event) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if rec != nil {
		x.rec = *rec
	}
	if len(events) == 0 {
		return
	}
	x.hot = append(x.hot, events...)
	x.lastSeq = events[len(events)-1].Sequence
	if len(x.hot) > x.hotWindow {
		drop := len(x.hot) - x.hotWindow/2
		x.hot = slices.Clone(x.hot[drop:]) // a fresh array, so the dropped events can be collected
		x.hotStart += int64(drop)
	}
	close(x.changed)
	x.changed = make(chan struct{})
}

// closeSubscriptions wakes every subscriber for the last time; their next Read reports ErrClosed.
func (x *execution) closeSubscriptions() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return
	}
	x.closed = true
	close(x.changed)
	x.changed = make(chan struct{})
}
