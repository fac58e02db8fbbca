package remote_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/providers/remote"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// A typed answer given at the edge travels to the upstream as given (the local copy of the
// action carries what the upstream's says: its arguments and decisions, so the answer is checked
// here as it will be there); one given at the upstream directly is recorded at the edge with its
// decision and message.
func TestTypedAnswersTravelUpstream(t *testing.T) {
	u := startUpstream(t)
	e := startEdge(t, t.TempDir(), remote.Config{UpstreamURL: u.url, UpstreamProvider: "mock"})
	host := strings.TrimPrefix(u.url, "http://")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	edit, reject := api.DecisionEdit, api.DecisionReject
	why := "not this one"
	editable := api.JSONObject{"requireApproval": true, "editableApproval": true}
	for _, tc := range []struct {
		name     string
		answer   api.ActionResponse
		state    api.ExecutionState
		output   string // of a success
		failure  string // of a failure
		upstream bool   // answered at the upstream, not at the edge
	}{
		{name: "edit", answer: api.ActionResponse{Decision: &edit, Arguments: &api.JSONObject{"input": "edited at the edge"}},
			state: api.ExecutionStateSucceeded, output: "Echo: edited at the edge"},
		{name: "reject", answer: api.ActionResponse{Decision: &reject, Message: &why},
			state: api.ExecutionStateFailed, failure: "Upstream " + host + " failed the execution: Mock execution was not approved: " + why},
		{name: "reject at the upstream", answer: api.ActionResponse{Decision: &reject, Message: &why}, upstream: true,
			state: api.ExecutionStateFailed, failure: "Upstream " + host + " failed the execution: Mock execution was not approved: " + why},
	} {
		t.Run(tc.name, func(t *testing.T) {
			input := "typed " + tc.name
			exec := e.start(t, input, editable)
			waitState(t, e.client, exec.ID, api.ExecutionStateAwaitingApproval)
			local, err := e.client.GetExecution(ctx, exec.ID)
			if err != nil || local.PendingAction == nil || local.PendingAction.Arguments == nil || (*local.PendingAction.Arguments)["input"] != input {
				t.Fatalf("the local action %+v (%v) does not carry the upstream's arguments", local.PendingAction, err)
			}
			client, id, actionID := e.client, exec.ID, local.PendingAction.ID
			if tc.upstream {
				client, id = upstreamClient(t, u), u.executionFor(t, input)
				upstream, err := client.GetExecution(ctx, id)
				if err != nil || upstream.PendingAction == nil {
					t.Fatalf("upstream execution %+v, %v", upstream, err)
				}
				actionID = upstream.PendingAction.ID
			}
			if _, err := client.RespondToAction(ctx, id, actionID, tc.answer); err != nil {
				t.Fatal(err)
			}
			final, err := e.client.WaitForTerminal(ctx, exec.ID)
			if err != nil {
				t.Fatal(err)
			}
			if final.State != tc.state || (tc.output != "" && *final.FinalOutput != tc.output) ||
				(tc.failure != "" && (final.Error == nil || final.Error.Message != tc.failure)) {
				t.Fatalf("got %s %v %+v, want %s %q%q", final.State, final.FinalOutput, final.Error, tc.state, tc.output, tc.failure)
			}
			for _, ev := range allEvents(t, e.client, exec.ID) {
				if ev.Type != api.StandardEventTypeActionResponded {
					continue
				}
				data := typed(ev.Data.AsActionRespondedData())
				if data.Decision == nil || *data.Decision != *tc.answer.Decision {
					t.Fatalf("the edge recorded %+v, want decision %s", data, *tc.answer.Decision)
				}
			}
		})
	}
}
