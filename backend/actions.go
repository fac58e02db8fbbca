package backend

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/harness-edge/harness-edge/backend/approvals"
	"github.com/harness-edge/harness-edge/backend/conversation"
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
//
// With a standing rule that answers it (standingrules.go: chosen before, without the lock),
// the same commit also appends the rule's action.responded and resolves the action: the
// execution never waits, the inbox never lists it, and the log shows both the question and who
// answered it. Otherwise the action carries its deadline (expiresAt) when its provider or its
// start sets one, and the expiry loop is told of it once it is durable.
func (x *execution) openAction(checkpoint []byte, in ActionInput, standing *store.Rule) (*pendingAction, error) {
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
	created := time.Now()
	at := formatTimestamp(created)
	req := api.ActionRequest{
		ID:          newID(actionIDPrefix),
		ExecutionID: x.id,
		Kind:        in.Kind,
		Title:       in.Title,
		Description: clonePtr(in.Description),
		Payload:     payload,
		CreatedAt:   at,
	}
	if err := describeAction(&req, in); err != nil {
		return nil, err
	}
	if standing == nil {
		if timeout := x.rt.opts.Approvals.timeoutFor(x.providerID, x.wrec.ActionTimeoutMs); timeout > 0 {
			expires := formatTimestamp(created.Add(timeout))
			req.ExpiresAt = &expires
		}
	}
	data, err := json.Marshal(req)
	if err != nil {
		return nil, providerError(msgInvalidAction)
	}
	if len(data) > x.rt.opts.MaxEventDataBytes {
		return nil, newError(CodeProviderError, msgEventDataTooLarge, x.rt.opts.MaxEventDataBytes)
	}
	rec := x.wrec
	rec.Execution.UpdatedAt = at
	rec.ActionIDs = append(slices.Clip(rec.ActionIDs), req.ID)
	c := change{
		at:         at,
		rec:        &rec,
		events:     []newEvent{{typ: api.StandardEventTypeActionRequired, data: data}},
		byProvider: true,
		checkpoint: checkpoint,
	}
	p := &pendingAction{id: req.ID, request: req, reply: make(chan actionReply, 1)}
	if standing != nil {
		answer := approvals.Answer(*standing)
		c.events = append(c.events, newEvent{typ: api.StandardEventTypeActionResponded, data: respondedData(req.ID, answer, true, ptr(ruleActor(standing.ID)), "")})
		c.actions = []store.Action{x.actionRecord(req, store.ActionResolved)}
		if err := x.commit(c); err != nil {
			return nil, x.refuseOverLimit(err)
		}
		p.reply <- actionReply{response: answer}
		x.opened = p
		return p, nil
	}
	rec.Execution.State = api.ExecutionStateAwaitingApproval
	if in.Kind == api.ActionKindInput {
		rec.Execution.State = api.ExecutionStateAwaitingInput
	}
	rec.PendingActionID = req.ID
	// The snapshot shows the action too (an extension), so that one GET finds what to answer.
	rec.Execution.PendingAction = &req
	c.actions = []store.Action{x.actionRecord(req, store.ActionPending)}
	if err := x.commit(c); err != nil {
		return nil, x.refuseOverLimit(err)
	}
	x.open(p)
	if req.ExpiresAt != nil {
		x.rt.approvals.wakeExpiry()
	}
	return p, nil
}

// describeAction adds what harness-edge says about an action beside the reference's members
// (docs/protocol.md, "Approvals"): the decisions it takes, the agent's options, the arguments
// an edit changes, the tool kind rules match on.
func describeAction(req *api.ActionRequest, in ActionInput) error {
	if len(in.Options) > 0 {
		options := slices.Clone(in.Options)
		req.Options = &options
	}
	if in.Arguments != nil {
		args, err := normalizeObject(in.Arguments)
		if err != nil {
			return providerError(msgInvalidAction)
		}
		req.Arguments = &args
	}
	if in.ToolKind != "" {
		req.ToolKind = ptr(in.ToolKind)
	}
	if in.Arguments != nil {
		// Only then do the decisions differ from the kind's (approvals.Decisions): an action
		// a reference client would see stays exactly the reference's.
		decisions := approvals.Decisions(in.Kind, true)
		req.Decisions = &decisions
	}
	return nil
}

// respondedData is the data of action.responded: the reference's {actionId, approved?} and
// what harness-edge adds when there is something to say (a typed answer's decision and its
// parts, the rule an *_always option created, who answered). A portable answer's decision is
// what its approved says, so it is not repeated: its event stays exactly the reference's.
func respondedData(actionID string, answer api.ActionResponse, typed bool, actor *api.Actor, createdRule string) []byte {
	data := map[string]any{"actionId": actionID}
	if answer.Approved != nil {
		data["approved"] = *answer.Approved
	}
	if answer.Decision != nil && typed {
		data["decision"] = *answer.Decision
	}
	if answer.OptionID != nil {
		data["optionId"] = *answer.OptionID
	}
	if answer.Message != nil {
		data["message"] = *answer.Message
	}
	if answer.Arguments != nil {
		data["arguments"] = *answer.Arguments
	}
	if createdRule != "" {
		data["createdRuleId"] = createdRule
	}
	putActor(data, actor)
	return mustData(data)
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
	// The answer must fit the action (a typed decision, an option, an edit's arguments): the
	// last of the checks, so a refused answer leaves the action pending (§7.2).
	typed := response.Decision != nil || response.OptionID != nil || response.Arguments != nil
	if response, err = approvals.Check(p.request, response); err != nil {
		return api.Execution{}, errInvalidAnswer(err)
	}
	at := now()
	actor := ActorFrom(ctx)
	rule := x.rememberedRule(p.request, response, actor, at)
	rec := x.wrec
	rec.Execution.State = api.ExecutionStateRunning
	rec.Execution.UpdatedAt = at
	rec.PendingActionID = ""
	rec.Execution.PendingAction = nil
	c := change{
		at:      at,
		rec:     &rec,
		events:  []newEvent{{typ: api.StandardEventTypeActionResponded, data: respondedData(actionID, response, typed, actor, rule.ID)}},
		actions: []store.Action{x.actionRecord(p.request, store.ActionResolved)},
	}
	if rule.ID != "" {
		c.rules = []store.Rule{rule}
	}
	if err := x.commit(c); err != nil {
		return api.Execution{}, err
	}
	x.takePending() // answered: p, the action answered
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
	if found && rec.Request.ExecutionID == executionID && rec.Status == store.ActionAbandoned {
		if by, ok := r.interruptedBy(executionID); ok {
			return errActionOfInterruptedTurn(actionID, by)
		}
	}
	return errActionNotFound(actionID)
}

// interruptedBy names the execution whose start interrupted executionID (busy policy
// interrupt: its cancel reason is conversation.InterruptReason), false for any other end.
func (r *Runtime) interruptedBy(executionID string) (string, bool) {
	rec, found, err := r.store.Execution(executionID)
	if err != nil || !found || rec.Execution.CancelReason == nil {
		return "", false // the plain ACTION_NOT_FOUND is still the right answer
	}
	return conversation.InterruptedBy(*rec.Execution.CancelReason)
}

func cloneActionResponse(in api.ActionResponse) api.ActionResponse {
	out := api.ActionResponse{Approved: clonePtr(in.Approved), Decision: clonePtr(in.Decision),
		Message: clonePtr(in.Message), OptionID: clonePtr(in.OptionID)}
	if in.Arguments != nil {
		args := deepCopyObject(*in.Arguments)
		out.Arguments = &args
	}
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
