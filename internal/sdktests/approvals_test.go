package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The SDK lists the inbox and answers from it with typed decisions; a standing rule created
// through it answers the next approval without anyone, until it is revoked; an answer the API
// does not know is refused with what was meant, the action left pending. The inbox's arrivals
// and resolutions, the rule's included, are on the tenant's stream (GET /v1/events).
func TestInboxAnswersAndRules(t *testing.T) {
	srv := newTestServer(t)
	c := newClient(t, srv.URL)
	ctx := context.Background()
	now, err := c.ReplayTenant(ctx, sdk.FollowOptions{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	conv, err := c.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	startWaiting := func(input string, config api.JSONObject) api.Execution {
		t.Helper()
		exec, err := c.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: input, Config: config})
		if err != nil {
			t.Fatal(err)
		}
		for e, err := range c.Events(ctx, exec.ID, 0) {
			if err != nil {
				t.Fatal(err)
			}
			if e.Type == api.StandardEventTypeActionRequired || e.Type.Terminal() {
				break
			}
		}
		exec, err = c.GetExecution(ctx, exec.ID)
		if err != nil {
			t.Fatal(err)
		}
		return exec
	}
	approval := api.JSONObject{"requireApproval": true}
	edited := startWaiting("to edit", api.JSONObject{"requireApproval": true, "editableApproval": true})
	rejected := startWaiting("to reject", approval)
	approved := startWaiting("to approve", approval)

	limit := 2
	var inbox []api.ListedAction
	for item, err := range c.AllPendingActions(ctx, &api.ListActionsParams{Limit: &limit}) {
		if err != nil {
			t.Fatal(err)
		}
		inbox = append(inbox, item)
	}
	var order []string
	for _, item := range inbox {
		order = append(order, item.Action.ExecutionID)
	}
	if want := []string{edited.ID, rejected.ID, approved.ID}; !slices.Equal(order, want) || inbox[0].ProviderID != "mock" || inbox[0].ConversationID != conv.ID {
		t.Fatalf("inbox %v, want %v oldest first", order, want)
	}

	// Refused answers leave the action pending: a decision the action cannot take, an option it
	// does not offer, and (over plain HTTP, as a hand-written client sends it) a typo.
	for _, bad := range []api.ActionResponse{sdk.Respond("x"), sdk.ChooseOption("allow")} {
		if _, err := c.RespondToAction(ctx, approved.ID, inbox[2].Action.ID, bad); !errors.Is(err, sdk.ErrValidation) {
			t.Fatalf("answer %+v: %v, want ErrValidation", bad, err)
		}
	}
	resp, err := http.Post(srv.URL+"/v1/executions/"+approved.ID+"/actions/"+inbox[2].Action.ID+":respond", "application/json", strings.NewReader(`{"approve": true}`))
	if err != nil {
		t.Fatal(err)
	}
	var problem struct {
		Code    string `json:"code"`
		Details struct {
			Errors []api.FieldError `json:"errors"`
		} `json:"details"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&problem); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a typo: %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	if f := problem.Details.Errors; len(f) != 1 || *f[0].Pointer != "/approve" || f[0].Suggestion == nil || *f[0].Suggestion != "approved" {
		t.Fatalf("a typo's details: %+v", problem)
	}

	for _, a := range []struct {
		exec   api.Execution
		action api.ActionRequest
		answer api.ActionResponse
	}{
		{edited, inbox[0].Action, sdk.Edit(api.JSONObject{"input": "edited from the inbox"})},
		{rejected, inbox[1].Action, sdk.Reject("not today")},
		{approved, inbox[2].Action, sdk.Approve()},
	} {
		if _, err := c.RespondToAction(ctx, a.exec.ID, a.action.ID, a.answer); err != nil {
			t.Fatalf("answer %+v: %v", a.answer, err)
		}
	}
	for id, want := range map[string]string{edited.ID: "Echo: edited from the inbox", rejected.ID: "Mock execution was not approved: not today", approved.ID: "Echo: to approve"} {
		final, err := c.WaitForTerminal(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got := deref(final.FinalOutput)
		if final.Error != nil {
			got = final.Error.Message
		}
		if got != want {
			t.Errorf("%s: %q, want %q", id, got, want)
		}
	}
	if list, err := c.ListActions(ctx, nil); err != nil || len(list.Actions) != 0 {
		t.Fatalf("the inbox after answering: %+v %v", list, err)
	}

	// A rule answers the next approval; revoked, it answers nothing.
	title := "Approve mock *"
	rule, err := c.CreateActionRule(ctx, api.CreateActionRuleRequest{ConversationID: &conv.ID,
		Match: api.ActionRuleMatch{Title: &title}, Decision: api.RuleDecisionApprove})
	if err != nil {
		t.Fatal(err)
	}
	if auto := startWaiting("by the rule", approval); auto.State != api.ExecutionStateRunning && auto.State != api.ExecutionStateSucceeded {
		t.Fatalf("with the rule the execution is %s", auto.State)
	}
	if rules, err := c.ListActionRules(ctx, &api.ListActionRulesParams{ConversationID: &conv.ID}); err != nil || len(rules) != 1 || rules[0].ID != rule.ID {
		t.Fatalf("rules %+v %v", rules, err)
	}
	if revoked, err := c.RevokeActionRule(ctx, rule.ID); err != nil || revoked.RevokedAt == nil {
		t.Fatalf("revoke: %+v %v", revoked, err)
	}
	if waits := startWaiting("after the revocation", approval); waits.State != api.ExecutionStateAwaitingApproval {
		t.Fatalf("after the revocation the execution is %s", waits.State)
	}
	if got, err := c.GetActionRule(ctx, rule.ID); err != nil || got.RevokedAt == nil {
		t.Fatalf("the revoked rule: %+v %v", got, err)
	}
	requireInboxOnTenantStream(t, c, now.NextCursor, rule.ID)
}

// requireInboxOnTenantStream reads the tenant's stream from after (a page at a time, as a
// client catching up does) and requires each action.required of it to be followed by its
// action.responded there, except the last one (still waiting), and the rule to be an answer's
// actor there.
func requireInboxOnTenantStream(t *testing.T, c *sdk.Client, after, rule string) {
	t.Helper()
	opts := sdk.FollowOptions{After: after, Types: []api.StandardEventType{api.StandardEventTypeActionRequired, api.StandardEventTypeActionResponded}}
	asked := map[string]bool{} // action id → answered
	var order []string
	byRule := 0
	for {
		page, err := c.ReplayTenant(context.Background(), opts, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Events {
			switch e.Type {
			case api.StandardEventTypeActionRequired:
				id := typed(e.Data.AsActionRequest()).ID
				asked[id] = false
				order = append(order, id)
			case api.StandardEventTypeActionResponded:
				data := typed(e.Data.AsActionRespondedData())
				if answered, ok := asked[data.ActionID]; !ok || answered {
					t.Fatalf("the tenant's stream answers %s before asking it, or twice", data.ActionID)
				}
				asked[data.ActionID] = true
				if data.Actor != nil && data.Actor.ID == rule && deref(data.Actor.Kind) == api.ActorKindRule {
					byRule++
				}
			default:
				t.Fatalf("the type filter let %s through", e.Type)
			}
		}
		if len(page.Events) == 0 {
			break
		}
		opts.After = page.NextCursor
	}
	if len(order) != 5 || byRule != 1 {
		t.Fatalf("the tenant's stream asked %d actions (want 5) and the rule answered %d (want 1)", len(order), byRule)
	}
	for i, id := range order {
		if last := i == len(order)-1; asked[id] == last {
			t.Fatalf("on the tenant's stream action %s (%d of %d) answered: %v", id, i+1, len(order), asked[id])
		}
	}
}
