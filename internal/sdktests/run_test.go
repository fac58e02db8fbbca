package sdk_test

import (
	"errors"
	"testing"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Without OnAction, Run returns at the first pending request with the server's state and what
// the caller needs to answer it; answering then and following with WaitForTerminal finishes it.
func TestRunWithoutHandlerReturnsTheServersStateAndThePendingAction(t *testing.T) {
	srv := newTestServer(t)
	c := newClient(t, srv.URL)
	conv, err := c.CreateConversation(t.Context(), api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(t.Context(), api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "x",
		Config: api.JSONObject{"requireApproval": true}}, sdk.RunHandlers{})
	var pending *sdk.ActionRequiredError
	if !errors.Is(err, sdk.ErrActionRequired) || !errors.Is(err, sdk.ErrNoActionHandler) || !errors.As(err, &pending) {
		t.Fatalf("Run without OnAction = %+v, %v; want an *ActionRequiredError", res, err)
	}
	if res.Execution.State != api.ExecutionStateAwaitingApproval || pending.Execution.State != api.ExecutionStateAwaitingApproval ||
		pending.Execution.ID != res.Execution.ID {
		t.Fatalf("Run returned state %q (error's %q), the server's is awaiting_approval", res.Execution.State, pending.Execution.State)
	}
	if pending.Action.Kind != api.ActionKindApproval || pending.Action.ID == "" || pending.Action.ExecutionID != res.Execution.ID {
		t.Fatalf("pending action = %+v", pending.Action)
	}
	server, err := c.GetExecution(t.Context(), res.Execution.ID)
	if err != nil || server.State != api.ExecutionStateAwaitingApproval {
		t.Fatalf("left %+v, %v", server, err)
	}

	// What the error says to do: answer, then follow to the end.
	if _, err := c.RespondToAction(t.Context(), res.Execution.ID, pending.Action.ID, api.ActionResponse{Approved: new(true)}); err != nil {
		t.Fatal(err)
	}
	final, err := c.WaitForTerminal(t.Context(), res.Execution.ID)
	if err != nil || final.State != api.ExecutionStateSucceeded {
		t.Fatalf("after the answer: %+v, %v", final, err)
	}
}

// An action.required that is no longer pending (answered elsewhere: here, long before a Run
// that replays the execution by its idempotency key) does not end a Run without OnAction.
func TestRunWithoutHandlerFollowsOnWhenTheActionWasAnswered(t *testing.T) {
	srv := newTestServer(t)
	c := newClient(t, srv.URL)
	conv, err := c.CreateConversation(t.Context(), api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	req := api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "x",
		Config: api.JSONObject{"requireApproval": true}, IdempotencyKey: new("answered-elsewhere")}
	exec := start(t, c, req)
	action := untilAction(t, c, exec.ID)
	if _, err := c.RespondToAction(t.Context(), exec.ID, action.ID, api.ActionResponse{Approved: new(true)}); err != nil {
		t.Fatal(err)
	}

	res, err := c.Run(t.Context(), req, sdk.RunHandlers{})
	if err != nil || !res.Replayed || res.Execution.ID != exec.ID || !res.Succeeded() {
		t.Fatalf("Run replaying an answered execution = %+v, %v", res, err)
	}
}
