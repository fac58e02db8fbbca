package sdk

import (
	"context"
	"iter"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Approvals are a harness-edge extension (docs/protocol.md, "Approvals"): typed answers, the
// inbox of pending actions and standing rules. A server that implements only the reference
// answers the inbox and rules calls with ErrNotFound (or a 405), and drops the typed members of
// an answer (its portable members, approved and value, keep their meaning).

// Approve is the answer that approves an action (what {approved: true} says, typed).
func Approve() api.ActionResponse {
	d := api.DecisionApprove
	return api.ActionResponse{Decision: &d}
}

// Reject is the answer that rejects an approval, or declines an input; message, when not
// empty, is what the agent is told.
func Reject(message string) api.ActionResponse {
	d := api.DecisionReject
	r := api.ActionResponse{Decision: &d}
	if message != "" {
		r.Message = &message
	}
	return r
}

// Edit approves with changed arguments: the action's Arguments, whole, with the changes made
// (an action that has no Arguments cannot be edited).
func Edit(arguments api.JSONObject) api.ActionResponse {
	d := api.DecisionEdit
	return api.ActionResponse{Decision: &d, Arguments: &arguments}
}

// Respond answers an input with value.
func Respond(value any) api.ActionResponse {
	d := api.DecisionRespond
	v := api.JSONValue(value)
	return api.ActionResponse{Decision: &d, Value: &v}
}

// ChooseOption answers with one of the action's Options (the agent's own choices), by id: an
// allow_* option approves, a reject_* one rejects, and an *_always option also makes the server
// answer the same question in the conversation from now on (a standing rule).
func ChooseOption(optionID string) api.ActionResponse {
	return api.ActionResponse{OptionID: &optionID}
}

// ListActions returns one page of the inbox (GET /v1/actions): the tenant's pending actions,
// oldest first, across executions; params may be nil. AllPendingActions walks every page.
// Answer one with RespondToAction(ctx, item.Action.ExecutionID, item.Action.ID, …).
func (c *Client) ListActions(ctx context.Context, params *api.ListActionsParams) (api.ActionList, error) {
	resp, err := c.api.ListActionsWithResponse(ctx, params)
	if err != nil {
		return api.ActionList{}, transportError("listActions", err)
	}
	return result(resp.HTTPResponse, resp.Body, resp.JSON200)
}

// AllPendingActions yields every pending action ListActions selects, oldest first, page after
// page. An error is yielded once and ends the sequence.
func (c *Client) AllPendingActions(ctx context.Context, params *api.ListActionsParams) iter.Seq2[api.ListedAction, error] {
	var p api.ListActionsParams
	if params != nil {
		p = *params
	}
	return func(yield func(api.ListedAction, error) bool) {
		cursor := p.After
		for {
			p.After = cursor
			list, err := c.ListActions(ctx, &p)
			if err != nil {
				yield(api.ListedAction{}, err)
				return
			}
			for _, a := range list.Actions {
				if !yield(a, nil) {
					return
				}
			}
			if list.NextCursor == nil || *list.NextCursor == "" {
				return
			}
			cursor = list.NextCursor
		}
	}
}

// ListActionRules returns the tenant's standing rules (GET /v1/action-rules), oldest first,
// revoked ones included unless params.Active; params may be nil.
func (c *Client) ListActionRules(ctx context.Context, params *api.ListActionRulesParams) ([]api.ActionRule, error) {
	resp, err := c.api.ListActionRulesWithResponse(ctx, params)
	if err != nil {
		return nil, transportError("listActionRules", err)
	}
	list, err := result(resp.HTTPResponse, resp.Body, resp.JSON200)
	return list.Rules, err
}

// CreateActionRule puts a standing rule in force (POST /v1/action-rules). Like
// CreateConversation it is retried only when the server certainly did not act on it: a repeat
// of a rule that was created would create a second one.
func (c *Client) CreateActionRule(ctx context.Context, req api.CreateActionRuleRequest) (api.ActionRule, error) {
	resp, err := c.api.CreateActionRuleWithResponse(withRetryMode(ctx, retryUnprocessed), req)
	if err != nil {
		return api.ActionRule{}, transportError("createActionRule", err)
	}
	return result(resp.HTTPResponse, resp.Body, resp.JSON201)
}

// GetActionRule reads a rule, revoked or not (GET /v1/action-rules/{id}).
func (c *Client) GetActionRule(ctx context.Context, id string) (api.ActionRule, error) {
	resp, err := c.api.GetActionRuleWithResponse(ctx, id)
	if err != nil {
		return api.ActionRule{}, transportError("getActionRule", err)
	}
	return result(resp.HTTPResponse, resp.Body, resp.JSON200)
}

// RevokeActionRule ends a rule (POST /v1/action-rules/{id}:revoke); revoking a revoked rule
// returns it as it is, so a repeat is harmless.
func (c *Client) RevokeActionRule(ctx context.Context, id string) (api.ActionRule, error) {
	resp, err := c.api.RevokeActionRuleWithResponse(ctx, id)
	if err != nil {
		return api.ActionRule{}, transportError("revokeActionRule", err)
	}
	return result(resp.HTTPResponse, resp.Body, resp.JSON200)
}
