package backend

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// awaitAction waits for the answer to x's pending action actionID.
func (x *execution) awaitAction(ctx context.Context, actionID string) (api.ActionResponse, error) {
	x.writeMu.Lock()
	p := x.opened // not x.pending: an answer may already have resolved it
	x.writeMu.Unlock()
	if p == nil || p.id != actionID {
		if x.runCtx.Err() != nil {
			return api.ActionResponse{}, providerError(msgExecutionAborted)
		}
		return api.ActionResponse{}, errActionNotFound(actionID)
	}
	select {
	case reply := <-p.reply:
		return reply.response, reply.err
	case <-x.runCtx.Done():
	case <-ctx.Done():
	}
	// A reply (or rejection) may have raced with the context: it is the more precise answer.
	select {
	case reply := <-p.reply:
		return reply.response, reply.err
	default:
	}
	if x.runCtx.Err() != nil {
		return api.ActionResponse{}, providerError(msgExecutionAborted)
	}
	return api.ActionResponse{}, ctx.Err()
}

// openAction validates the request and, as one unit, enters awaiting_*, records the action and
// appends action.required. The action record is durable before the event exposes its id.
func (x *execution) openAction(checkpoint []byte, in ActionInput) (*pendingAction, error) {
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	if x.runCtx.Err() != nil || isTerminalState(x.state()) {
		return nil, providerError(msgExecutionAborted)
	}
	if state := x.state(); state != api.ExecutionStateRunning {
		return nil, newError(CodeInvalidState, msgActionWrongState, state)
	}
	payload, err := normalizeObject(in.Payload)
	if err != nil || !in.Kind.Valid() || in.Title == "" {
		return nil, providerError(msgInvalidAction)
	}
	at := now()
	req := api.ActionRequest{
		ID:          newID(actionIDPrefix),
		ExecutionID: x.id,
		Kind:        in.Kind,
		Title:       in.Title,
		Description: clonePtr(in.Description),
		Payload:     payload,
		CreatedAt:   at,
	}
	data, err := json.Marshal(req)
	if err != nil {
		return nil, providerError(msgInvalidAction)
	}
	if len(data) > x.rt.opts.MaxEventDataBytes {
		return nil, newError(CodeProviderError, msgEventDataTooLarge, x.rt.opts.MaxEventDataBytes)
	}
	rec := x.wrec
	rec.Execution.State = api.ExecutionStateAwaitingApproval
	if in.Kind == api.ActionKindInput {
		rec.Execution.State = api.ExecutionStateAwaitingInput
	}
	rec.Execution.UpdatedAt = at
	rec.PendingActionID = req.ID
	// The snapshot shows the action too (an extension), so that one GET finds what to answer.
	rec.Execution.PendingAction = &req
	rec.ActionIDs = append(slices.Clip(rec.ActionIDs), req.ID)
	err = x.commit(change{
		at:         at,
		rec:        &rec,
		events:     []newEvent{{typ: api.StandardEventTypeActionRequired, data: data}},
		actions:    []store.Action{{Request: req, Status: store.ActionPending}},
		byProvider: true,
		checkpoint: checkpoint,
	})
	if err != nil {
		return nil, x.refuseOverLimit(err)
	}
	p := &pendingAction{id: req.ID, request: req, reply: make(chan actionReply, 1)}
	x.pending, x.opened = p, p
	return p, nil
}

// checkStoredResponse runs the checks of pendingFor, in the same order, against the stored
// record of an execution another node runs (ClusterHost.CheckResponse): before the body is
// decoded and anything travels to the owner.
func (r *Runtime) checkStoredResponse(rec store.Execution, actionID string) error {
	if rec.PendingActionID == "" || rec.PendingActionID != actionID {
		return r.actionNotPending(rec.Execution.ID, actionID)
	}
	if state := rec.Execution.State; state != api.ExecutionStateAwaitingApproval && state != api.ExecutionStateAwaitingInput {
		return errCannotRespond(state)
	}
	return nil
}

// respond answers an action of an execution this node runs: for a local caller, or for
// another node's (a respond command, package cluster).
func (x *execution) respond(ctx context.Context, actionID string, decode func() (api.ActionResponse, error)) (api.Execution, error) {
	x.writeMu.Lock()
	_, err := x.pendingFor(actionID)
	x.writeMu.Unlock()
	if err != nil {
		return api.Execution{}, err
	}
	var response api.ActionResponse
	if decode != nil {
		if response, err = decode(); err != nil {
			return api.Execution{}, err
		}
	}

	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	// Someone else may have answered, or the execution moved on, while decode ran.
	p, err := x.pendingFor(actionID)
	if err != nil {
		return api.Execution{}, err
	}
	at := now()
	rec := x.wrec
	rec.Execution.State = api.ExecutionStateRunning
	rec.Execution.UpdatedAt = at
	rec.PendingActionID = ""
	rec.Execution.PendingAction = nil
	data := map[string]any{"actionId": actionID}
	if response.Approved != nil {
		data["approved"] = *response.Approved
	}
	putActor(data, ActorFrom(ctx))
	err = x.commit(change{
		at:      at,
		rec:     &rec,
		events:  []newEvent{{typ: api.StandardEventTypeActionResponded, data: mustData(data)}},
		actions: []store.Action{{Request: p.request, Status: store.ActionResolved}},
	})
	if err != nil {
		return api.Execution{}, err
	}
	x.pending = nil
	p.reply <- actionReply{response: cloneActionResponse(response)}
	return x.snapshot(), nil
}

// pendingFor returns the pending action actionID of x, or the error the protocol gives when it
// is not pending (§7.2 steps 2–3). The caller holds x.writeMu.
func (x *execution) pendingFor(actionID string) (*pendingAction, error) {
	p := x.pending
	if p == nil || p.id != actionID {
		return nil, x.rt.actionNotPending(x.id, actionID)
	}
	if state := x.state(); state != api.ExecutionStateAwaitingApproval && state != api.ExecutionStateAwaitingInput {
		return nil, errCannotRespond(state)
	}
	return p, nil
}

func errCannotRespond(state api.ExecutionState) *Error {
	return newError(CodeInvalidState, "Execution cannot accept an action response while %s", state)
}

// actionNotPending distinguishes an action answered before (ACTION_ALREADY_RESOLVED) from every
// other id (ACTION_NOT_FOUND): unknown, another execution's, or abandoned.
func (r *Runtime) actionNotPending(executionID, actionID string) error {
	rec, found, err := r.store.Action(actionID)
	if err != nil {
		return internalError("read action", err)
	}
	if found && rec.Request.ExecutionID == executionID && rec.Status == store.ActionResolved {
		return errActionAlreadyResolved(actionID)
	}
	return errActionNotFound(actionID)
}

func cloneActionResponse(in api.ActionResponse) api.ActionResponse {
	out := api.ActionResponse{Approved: clonePtr(in.Approved)}
	if in.Metadata != nil {
		m := deepCopyObject(*in.Metadata)
		out.Metadata = &m
	}
	if in.Value != nil {
		v := deepCopyValue(*in.Value)
		out.Value = &v
	}
	return out
}
