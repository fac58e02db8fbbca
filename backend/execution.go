package backend

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
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

// StartExecution runs checks 3–7 of protocol-reference §2.3(6) (schema validation is the
// caller's): conversation, provider, capability preflight, idempotency, then creation. replayed
// reports an idempotent replay (HTTP adds Idempotent-Replayed: true); the snapshot is then the
// original execution's current one.
func (r *Runtime) StartExecution(ctx context.Context, req api.StartExecutionRequest) (exec api.Execution, replayed bool, err error) {
	if err := ctx.Err(); err != nil {
		return api.Execution{}, false, err
	}
	if err := r.checkOpen(); err != nil {
		return api.Execution{}, false, err
	}
	if _, err := r.GetConversation(ctx, req.ConversationId); err != nil {
		return api.Execution{}, false, err
	}
	reg, ok := r.provider(req.ProviderId)
	if !ok {
		return api.Execution{}, false, newError(CodeProviderNotFound, "Provider not found: %s", req.ProviderId)
	}
	caps := normalizeCapabilities(req.RequiredCapabilities)
	if failing := unsupportedCapabilities(reg.manifest, caps); len(failing) > 0 {
		return api.Execution{}, false, errCapabilityUnsupported(req.ProviderId, failing)
	}
	var config api.JsonObject
	if req.Config != nil {
		config = *req.Config
	}
	config, _, err = normalizeObject(config)
	if err != nil {
		return api.Execution{}, false, newError(CodeValidation, "Invalid execution request")
	}

	var idem *idempotencyRecord
	if req.IdempotencyKey != nil {
		key := *req.IdempotencyKey
		// Lookup, creation and registration form one atomic unit per (conversation, key).
		unlock := r.idempotencyLocks.lock(req.ConversationId + "\x00" + key)
		defer unlock()
		fp, err := requestFingerprint(req.ConversationId, req.ProviderId, req.Input, caps, config)
		if err != nil {
			return api.Execution{}, false, newError(CodeValidation, "Invalid execution request")
		}
		prior, found, err := r.store.Idempotency(req.ConversationId, key)
		if err != nil {
			return api.Execution{}, false, internalError("read idempotency record", err)
		}
		if found {
			if prior.Fingerprint != fp {
				return api.Execution{}, false, newError(CodeIdempotencyConflict, "Idempotency key was already used with a different execution request")
			}
			exec, err := r.GetExecution(ctx, prior.ExecutionID)
			return exec, err == nil, err
		}
		idem = &idempotencyRecord{ConversationID: req.ConversationId, Key: key, Fingerprint: fp}
	}
	exec, err = r.createExecution(reg, req, caps, config, idem)
	return exec, false, err
}

func (r *Runtime) createExecution(reg registeredProvider, req api.StartExecutionRequest, caps []string, config api.JsonObject, idem *idempotencyRecord) (api.Execution, error) {
	at := now()
	rec := executionRecord{
		Execution: api.Execution{
			Id:                   newID(executionIDPrefix),
			ConversationId:       req.ConversationId,
			ProviderId:           req.ProviderId,
			State:                api.ExecutionStateQueued,
			Input:                req.Input,
			RequiredCapabilities: caps,
			EffectiveConfig:      config,
			CreatedAt:            at,
			UpdatedAt:            at,
		},
	}
	c := change{
		at:     at,
		rec:    &rec,
		events: []newEvent{{typ: api.StandardEventTypeRunQueued, data: mustData(map[string]string{"providerId": req.ProviderId})}},
	}
	if idem != nil {
		rec.IdempotencyKey = &idem.Key
		idem.ExecutionID = rec.Execution.Id
		c.idempotency = []idempotencyRecord{*idem}
	}
	x := newExecution(r, rec, reg.provider)
	x.writeMu.Lock()
	err := r.commit(x, c)
	snapshot := cloneExecution(x.rec.Execution) // queued: taken before the run can start
	x.writeMu.Unlock()
	if err != nil {
		x.stopRun(err)
		return api.Execution{}, err
	}

	r.mu.Lock()
	if !r.closed {
		r.live[x.id] = x
	}
	r.mu.Unlock()
	r.observer.ExecutionStarted(req.ProviderId)
	if !r.track(func() { r.runExecution(x) }) {
		// Closed between commit and scheduling: the record stays queued and the next Open fails
		// it. The caller learns the execution exists but will not run here.
		x.stopRun(errRuntimeClosing)
		return snapshot, ErrClosed
	}
	return snapshot, nil
}

// GetExecution returns the execution's current snapshot; NOT_FOUND when unknown.
func (r *Runtime) GetExecution(ctx context.Context, id string) (api.Execution, error) {
	if err := ctx.Err(); err != nil {
		return api.Execution{}, err
	}
	if err := r.checkOpen(); err != nil {
		return api.Execution{}, err
	}
	if x := r.liveExecution(id); x != nil {
		return x.snapshot(), nil
	}
	rec, err := r.storedExecution(id)
	if err != nil {
		return api.Execution{}, err
	}
	return cloneExecution(rec.Execution), nil
}

// runExecution is the goroutine of one execution (protocol-reference §4.3).
func (r *Runtime) runExecution(x *execution) {
	if r.beforeRun != nil {
		r.beforeRun(x.id)
	}
	if !r.startRun(x) {
		return
	}
	run := &Run{rt: r, x: x, config: deepCopyObject(x.config)}
	result, err := r.callProvider(x, run)
	r.finishRun(x, result, err)
}

// startRun moves queued → running and appends run.started, unless cancellation got there first
// (then the provider is never invoked). The reference's "starting" state is passed through
// within this one atomic unit and is never observable.
func (r *Runtime) startRun(x *execution) bool {
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	if x.state() != api.ExecutionStateQueued || x.runCtx.Err() != nil {
		return false
	}
	at := now()
	rec := x.rec
	rec.Execution.State = api.ExecutionStateRunning
	rec.Execution.StartedAt = &at
	rec.Execution.UpdatedAt = at
	err := r.commit(x, change{
		at:     at,
		rec:    &rec,
		events: []newEvent{{typ: api.StandardEventTypeRunStarted, data: mustData(map[string]string{"providerId": x.providerID})}},
	})
	if err != nil {
		r.log.Error("start execution", "execution", x.id, "err", err)
		return false
	}
	return true
}

// callProvider runs the provider, turning a panic into an execution failure instead of a crash
// of the whole runtime. The stack goes to the log, not into the caller-visible message.
func (r *Runtime) callProvider(x *execution, run *Run) (result Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			r.log.Error("provider panicked", "execution", x.id, "provider", x.providerID, "panic", v, "stack", string(debug.Stack()))
			err = fmt.Errorf("Provider panicked: %v", v)
		}
	}()
	return x.provider.Run(x.runCtx, run)
}

// finishRun records the provider's outcome (protocol-reference §4.3 steps 4–5).
func (r *Runtime) finishRun(x *execution, result Result, runErr error) {
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	state := x.state()
	if isTerminalState(state) || state == api.ExecutionStateCancelling {
		return // cancellation (or an earlier failure) owns the outcome
	}
	if runErr != nil && errors.Is(context.Cause(x.runCtx), errRuntimeClosing) {
		return // the runtime is closing: recovery fails it on the next Open
	}
	switch {
	case runErr != nil:
		r.failLocked(x, providerErrorMessage(runErr))
	case state != api.ExecutionStateRunning:
		r.failLocked(x, msgUnresolvedAction)
	default:
		r.succeedLocked(x, result.FinalOutput)
	}
}

// succeedLocked appends output.text.done and run.completed and enters succeeded, as one unit.
func (r *Runtime) succeedLocked(x *execution, finalOutput string) {
	at := now()
	rec := x.rec
	rec.Execution.State = api.ExecutionStateSucceeded
	rec.Execution.FinalOutput = &finalOutput
	rec.Execution.EndedAt = &at
	rec.Execution.UpdatedAt = at
	err := r.commit(x, change{
		at:  at,
		rec: &rec,
		events: []newEvent{
			{typ: api.StandardEventTypeOutputTextDone, data: mustData(map[string]string{"text": finalOutput})},
			{typ: api.StandardEventTypeRunCompleted, data: mustData(map[string]string{"finalOutput": finalOutput})},
		},
	})
	if err != nil {
		r.log.Error("complete execution", "execution", x.id, "err", err)
		return
	}
	r.finished(x)
}

// failLocked enters failed with run.failed, abandoning a pending action, as one unit; the
// provider's pending RequestAction fails with the same message.
func (r *Runtime) failLocked(x *execution, message string) {
	at := now()
	rec := x.rec
	rec.Execution.State = api.ExecutionStateFailed
	rec.Execution.Error = &api.ExecutionError{Code: string(CodeProviderError), Message: message}
	rec.Execution.EndedAt = &at
	rec.Execution.UpdatedAt = at
	c := change{
		at:     at,
		rec:    &rec,
		events: []newEvent{{typ: api.StandardEventTypeRunFailed, data: mustData(map[string]string{"code": string(CodeProviderError), "message": message})}},
	}
	pending := x.abandonPendingAction(&rec, &c)
	if err := r.commit(x, c); err != nil {
		r.log.Error("fail execution", "execution", x.id, "err", err)
		return
	}
	pending.reject(message)
	r.finished(x)
}

// finished runs after a terminal commit (writeMu held): the execution leaves the live map (reads
// go to the store from now on; subscribers keep their pointer) and the provider context ends.
func (r *Runtime) finished(x *execution) {
	x.stopRun(errExecutionFinished)
	r.mu.Lock()
	delete(r.live, x.id)
	r.mu.Unlock()
	r.observer.ExecutionFinished(x.providerID, x.rec.Execution.State)
}

var errExecutionFinished = errors.New("execution finished")

// providerErrorMessage is the execution's error message for a provider error; never empty
// (protocol-reference §16 item 8: an empty message would violate the schema).
func providerErrorMessage(err error) string {
	msg := err.Error()
	if strings.TrimSpace(msg) == "" {
		return msgEmptyProviderError
	}
	return msg
}
