package backend

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/harness-edge/harness-edge/backend/conversation"
	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// StartExecution runs checks 3–7 of docs/protocol.md §2.3(6) (schema validation is the
// caller's): conversation (ctx's tenant's), provider, capability preflight, idempotency, the
// tenant's bound on running executions (RATE_LIMITED), then creation, under the busy policy
// of the start or its conversation (turns.go: CONVERSATION_BUSY, or waiting). replayed
// reports an idempotent replay (HTTP adds Idempotent-Replayed: true); the snapshot is then the
// original execution's current one.
func (r *Runtime) StartExecution(ctx context.Context, req api.StartExecutionRequest) (exec api.Execution, replayed bool, err error) {
	if err := ctx.Err(); err != nil {
		return api.Execution{}, false, err
	}
	if err := r.checkOpen(); err != nil {
		return api.Execution{}, false, err
	}
	if err := r.admit(); err != nil {
		return api.Execution{}, false, err
	}
	tenant := TenantFrom(ctx)
	convPolicy, err := r.conversationDesk.require(ctx, req.ConversationID)
	if err != nil {
		return api.Execution{}, false, err
	}
	if err := checkBusyPolicy(req.BusyPolicy); err != nil {
		return api.Execution{}, false, err
	}
	policy := conversation.Effective(convPolicy, req.BusyPolicy)
	reg, ok := r.provider(req.ProviderID)
	if !ok {
		return api.Execution{}, false, newError(CodeProviderNotFound, "Provider not found: %s", req.ProviderID)
	}
	caps := normalizeCapabilities(req.RequiredCapabilities)
	if failing := unsupportedCapabilities(reg.manifest, caps); len(failing) > 0 {
		return api.Execution{}, false, errCapabilityUnsupported(req.ProviderID, failing)
	}
	config, err := normalizeObject(req.Config) // absent (nil) is {}
	if err != nil {
		return api.Execution{}, false, newError(CodeValidation, "Invalid execution request")
	}
	if err := checkActionTimeout(req.ActionTimeoutSeconds); err != nil {
		return api.Execution{}, false, err
	}

	var idem *store.Idempotency
	if req.IdempotencyKey != nil {
		key := *req.IdempotencyKey
		// Lookup, creation and registration form one atomic unit per (tenant, conversation, key).
		unlock := r.idempotencyLocks.lock(idempotencyLockKey(tenant.ID, req.ConversationID, key))
		defer unlock()
		fp, err := requestFingerprint(req.ConversationID, req.ProviderID, req.Input, caps, config, policy)
		if err != nil {
			return api.Execution{}, false, newError(CodeValidation, "Invalid execution request")
		}
		fp = withActionTimeout(fp, req.ActionTimeoutSeconds) // approvaloptions.go
		// The record is looked up under the caller's tenant only: another tenant's key (were it
		// ever on the same conversation) is never found, so its fingerprint is never compared
		// and no 409 can tell that it exists.
		prior, found, err := r.store.Idempotency(tenant.ID, req.ConversationID, key)
		if err != nil {
			return api.Execution{}, false, internalError("read idempotency record", err)
		}
		if found {
			return r.replayIdempotent(ctx, prior, fp)
		}
		idem = &store.Idempotency{ConversationID: req.ConversationID, Key: key, Fingerprint: fp, Tenant: tenant.ID}
	}
	exec, err = r.createExecution(ctx, tenant, reg, req, caps, config, idem, policy, convPolicy)
	refusedInCommit := ErrorCode(err) == CodeConversationBusy || ErrorCode(err) == CodeRateLimited || ErrorCode(err) == CodeBudgetExceeded
	if err != nil && idem != nil && (errors.Is(err, store.ErrConflict) || refusedInCommit) {
		// The lock above covers this process only: on a store shared by several nodes another
		// node committed the same key first, and the store refused this one (nothing of it was
		// applied). Answer exactly as if the lookup had found that record. A rejected start
		// looks too: the store may have found the conversation busy with that very execution,
		// or the tenant's bounds taken by it (an idempotent replay is never refused).
		prior, found, rerr := r.store.Idempotency(tenant.ID, req.ConversationID, idem.Key)
		if rerr != nil {
			return api.Execution{}, false, internalError("read idempotency record", rerr)
		}
		if found {
			return r.replayIdempotent(ctx, prior, idem.Fingerprint)
		}
	}
	return exec, false, err
}

// replayIdempotent answers a start whose key is already bound: the bound execution when the
// request is the same (fingerprint fp), IDEMPOTENCY_CONFLICT when it is not.
func (r *Runtime) replayIdempotent(ctx context.Context, prior store.Idempotency, fp string) (api.Execution, bool, error) {
	if prior.Fingerprint != fp {
		return api.Execution{}, false, newError(CodeIdempotencyConflict, "Idempotency key was already used with a different execution request")
	}
	exec, err := r.GetExecution(ctx, prior.ExecutionID)
	return exec, err == nil, err
}

func (r *Runtime) createExecution(ctx context.Context, tenant Tenant, reg registeredProvider, req api.StartExecutionRequest, caps []string, config api.JSONObject, idem *store.Idempotency, policy api.BusyPolicy, convPolicy *api.BusyPolicy) (api.Execution, error) {
	at := now()
	rec := store.Execution{
		Execution: api.Execution{
			ID:                   newExecutionID(),
			ConversationID:       req.ConversationID,
			ProviderID:           req.ProviderID,
			State:                api.ExecutionStateQueued,
			Input:                req.Input,
			RequiredCapabilities: caps,
			EffectiveConfig:      config,
			CreatedAt:            at,
			UpdatedAt:            at,
		},
		Tenant: tenant.ID,
	}
	c := change{
		at:     at,
		rec:    &rec,
		events: []newEvent{stringEvent(api.StandardEventTypeRunQueued, "providerId", req.ProviderID)},
		turn:   startTurn(&rec, policy, convPolicy), // nil for a portable start
	}
	if r.cluster != nil {
		rec.Owner = r.node // single-node records stay as they were: no owner field
		c.deadline = time.Now().Add(r.opts.StoreTimeout)
	}
	if idem != nil {
		rec.IdempotencyKey = &idem.Key
		idem.ExecutionID = rec.Execution.ID
		c.idempotency = []store.Idempotency{*idem}
	}
	if req.ActionTimeoutSeconds != nil {
		rec.ActionTimeoutMs = int64(*req.ActionTimeoutSeconds) * 1000
	}
	span := r.spans.start(ctx, &rec) // sets rec.TraceParent
	x := newExecution(r, rec, reg.provider)
	x.attachSpan(span)
	// refuse ends a start that never became an execution: nothing of it is stored or listed.
	refuse := func(cause, answer error) (api.Execution, error) {
		r.live.leave(x) // harmless when it never entered
		r.running.release(tenant.ID, x.id)
		x.stopRun(cause)
		close(x.admitted)
		x.endSpanRefused(answer)
		return api.Execution{}, answer
	}
	if r.cluster != nil && x.lease == 0 {
		return refuse(errLeaseUnsure, errLeaseUnsure) // fenced, and no new epoch yet
	}
	// The tenant's bounds are the store's to decide, in the commit (usagedesk.go); the slots
	// of this process only refuse early what the store would refuse too.
	created := time.UnixMilli(int64(store.PositionOf(rec.Execution).CreatedMs))
	c.admission = r.usageDesk.admission(tenant, req.ProviderID, rec.Execution.ID, created)
	if !r.running.acquire(tenant, x) {
		return refuse(errTooManyRunning(tenant.MaxRunning), errTooManyRunning(tenant.MaxRunning))
	}
	// The execution is live before its start can be seen (its record committed): whoever
	// finds the record finds it here too, so a stored execution that is not live here is
	// terminal, or another node's (handle.go). Nobody can find it before: its id is new.
	if !r.live.enter(x) {
		return refuse(errRuntimeClosing, ErrClosed)
	}
	x.writeMu.Lock()
	// Chained: if the record cannot be committed, nothing the provider queues behind it is.
	committed, err := x.submit(c)
	snapshot := cloneExecution(x.wrec.Execution) // queued: taken before the run can start
	x.writeMu.Unlock()
	if err != nil {
		return refuse(err, err)
	}
	// The provider starts now, while the record is being committed: what it emits is queued
	// behind the record, so a short execution usually shares the record's commit instead of
	// waiting for the next one. Nothing of it is visible before the record is durable, and the
	// execution is answered (202) and listed only after that.
	//
	// Except for an idempotent start on a store shared by several nodes: another node may
	// commit the same key first, and then this execution never existed. Its provider must not
	// have run at all (a remote provider would have started real work), so it starts only once
	// the record is durable.
	//
	// And except for a turn (turns.go): it may wait, or be refused, and its provider runs only
	// once run.started is committed.
	//
	// And except for an admitted start (usagedesk.go): the store may refuse it.
	waits := c.turn != nil && !c.turn.Parallel
	runEarly := (idem == nil || r.cluster == nil) && !waits && c.admission == nil
	var scheduled bool
	if runEarly {
		scheduled = r.track(func() { x.runExecution() })
	}
	if err := <-committed; err != nil {
		var busy *store.BusyError
		if errors.As(err, &busy) {
			return refuse(err, errConversationBusy(busy))
		}
		if errors.Is(err, store.ErrConversationSealed) { // being deleted (conversationseal.go)
			return refuse(err, errConversationSealed(rec.Execution.ConversationID, err))
		}
		if errors.Is(err, store.ErrConversationGone) { // deleted while this start was under way
			return refuse(err, errConversationNotFound(rec.Execution.ConversationID))
		}
		var refused *store.AdmissionError
		if errors.As(err, &refused) {
			return refuse(err, r.usageDesk.admissionRefused(tenant, req.ProviderID, created, refused))
		}
		return refuse(err, storeError("commit execution change", err))
	}
	if waits {
		waitingFor := x.committedWaitingFor()
		snapshot.WaitingFor = slices.Clone(waitingFor)
		interrupt, actor := conversation.PlanFor(policy).Interrupt, ActorFrom(ctx)
		scheduled = r.track(func() { x.runTurn(waitingFor, interrupt, actor) })
	} else if !runEarly {
		scheduled = r.track(func() { x.runExecution() })
	}
	r.observer.ExecutionStarted(req.ProviderID)
	close(x.admitted)
	if !scheduled {
		// Closed before the run could be scheduled: the record stays queued and the next Open
		// fails it. The caller learns the execution exists but will not run here.
		x.stopRun(errRuntimeClosing)
		return snapshot, ErrClosed
	}
	return snapshot, nil
}
