package sdk_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// events collects the events of an execution until the terminal one.
func events(t *testing.T, c *sdk.Client, id string, after int64) []api.RuntimeEvent {
	t.Helper()
	var got []api.RuntimeEvent
	for e, err := range c.Events(t.Context(), id, after) {
		if err != nil {
			t.Fatalf("Events(%s, %d): %v", id, after, err)
		}
		got = append(got, e)
	}
	return got
}

func types(events []api.RuntimeEvent) []api.StandardEventType {
	var ts []api.StandardEventType
	for _, e := range events {
		ts = append(ts, e.Type)
	}
	return ts
}

// untilAction follows an execution's events until it asks for an action, and returns it.
func untilAction(t *testing.T, c *sdk.Client, id string) api.ActionRequest {
	t.Helper()
	for e, err := range c.Events(t.Context(), id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == api.StandardEventTypeActionRequired {
			return api.ActionRequest{ID: typed(e.Data.AsActionRequest()).ID, Kind: api.ActionKind(typed(e.Data.AsActionRequest()).Kind), Title: typed(e.Data.AsActionRequest()).Title}
		}
	}
	t.Fatalf("execution %s ended without asking for an action", id)
	return api.ActionRequest{}
}

func start(t *testing.T, c *sdk.Client, req api.StartExecutionRequest) api.Execution {
	t.Helper()
	exec, err := c.StartExecution(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	return exec
}

func TestOperationsAgainstTheServer(t *testing.T) {
	srv := newTestServer(t)
	c := newClient(t, srv.URL)
	ctx := t.Context()

	if err := c.Health(ctx); err != nil {
		t.Fatal(err)
	}
	desc, err := c.DescribeRuntime(ctx)
	if err != nil || desc.Name != "harness-edge" || len(desc.Providers) != 1 || desc.Providers[0].ID != "mock" {
		t.Fatalf("DescribeRuntime = %+v, %v", desc, err)
	}
	caps, err := c.ListCapabilities(ctx)
	if err != nil || len(caps) != 1 || caps[0].Capabilities["action.approval"] != api.SupportLevelNative {
		t.Fatalf("ListCapabilities = %+v, %v", caps, err)
	}

	conv, err := c.CreateConversation(ctx, api.CreateConversationRequest{Metadata: &api.JSONObject{"user": "alice"}})
	if err != nil || !strings.HasPrefix(conv.ID, "conv_") || conv.Metadata["user"] != "alice" {
		t.Fatalf("CreateConversation = %+v, %v", conv, err)
	}
	got, err := c.GetConversation(ctx, conv.ID)
	if err != nil || !reflect.DeepEqual(got, conv) {
		t.Fatalf("GetConversation = %+v, %v; want %+v", got, err, conv)
	}

	// A plain run: start, stream, wait, read, artifacts, JSON replay in pages.
	exec := start(t, c, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "hello runtime",
		Config: api.JSONObject{"artifactName": "out.txt"}})
	if exec.State != api.ExecutionStateQueued || exec.ConversationID != conv.ID {
		t.Fatalf("StartExecution = %+v", exec)
	}
	streamed := events(t, c, exec.ID, 0)
	wantTypes := []api.StandardEventType{"run.queued", "run.started", "output.text.delta", "output.text.delta",
		"output.text.delta", "artifact.created", "output.text.done", "run.completed"}
	if !reflect.DeepEqual(types(streamed), wantTypes) {
		t.Fatalf("streamed %v, want %v", types(streamed), wantTypes)
	}
	final, err := c.WaitForTerminal(ctx, exec.ID)
	if err != nil || final.State != api.ExecutionStateSucceeded || *final.FinalOutput != "Echo: hello runtime" {
		t.Fatalf("WaitForTerminal = %+v, %v", final, err)
	}
	if read, err := c.GetExecution(ctx, exec.ID); err != nil || !reflect.DeepEqual(read, final) {
		t.Fatalf("GetExecution = %+v, %v; want %+v", read, err, final)
	}
	artifacts, err := c.ListArtifacts(ctx, exec.ID)
	if err != nil || len(artifacts) != 1 || artifacts[0].Name != "out.txt" || artifacts[0].ExecutionID != exec.ID {
		t.Fatalf("ListArtifacts = %+v, %v", artifacts, err)
	}
	page, err := c.ListEvents(ctx, exec.ID, 0, 3)
	if err != nil || len(page.Events) != 3 || page.NextCursor != 3 {
		t.Fatalf("ListEvents(0, 3) = %+v, %v", page, err)
	}
	rest, err := c.ListEvents(ctx, exec.ID, page.NextCursor, 0)
	if err != nil || !reflect.DeepEqual(append(page.Events, rest.Events...), streamed) {
		t.Fatalf("the JSON replay differs from the stream: %+v, %v", rest, err)
	}
	if tail := events(t, c, exec.ID, 6); !reflect.DeepEqual(tail, streamed[6:]) {
		t.Fatalf("Events after 6 = %v", types(tail))
	}

	// Approval: answer the action the stream shows.
	exec = start(t, c, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "deploy",
		Config: api.JSONObject{"requireApproval": true}})
	action := untilAction(t, c, exec.ID)
	if action.Kind != api.ActionKindApproval || action.Title != "Approve mock execution" {
		t.Fatalf("action = %+v", action)
	}
	resumed, err := c.RespondToAction(ctx, exec.ID, action.ID, api.ActionResponse{Approved: new(true)})
	if err != nil || resumed.State != api.ExecutionStateRunning {
		t.Fatalf("RespondToAction = %+v, %v", resumed, err)
	}
	if final, err := c.WaitForTerminal(ctx, exec.ID); err != nil || final.State != api.ExecutionStateSucceeded {
		t.Fatalf("after approval: %+v, %v", final, err)
	}

	// Cancel while waiting for approval.
	exec = start(t, c, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "deploy",
		Config: api.JSONObject{"requireApproval": true}})
	untilAction(t, c, exec.ID)
	cancelled, err := c.CancelExecution(ctx, exec.ID, api.CancelExecutionRequest{Reason: new("caller stopped")})
	if err != nil || cancelled.State != api.ExecutionStateCancelled {
		t.Fatalf("CancelExecution = %+v, %v", cancelled, err)
	}
	all := events(t, c, exec.ID, 0)
	if last := all[len(all)-1]; last.Type != api.StandardEventTypeRunCancelled || deref(typed(last.Data.AsRunCancelledData()).Reason) != "caller stopped" {
		t.Fatalf("last event = %+v", last)
	}
	if again, err := c.CancelExecution(ctx, exec.ID, api.CancelExecutionRequest{}); err != nil || !reflect.DeepEqual(again, cancelled) {
		t.Fatalf("second cancel = %+v, %v", again, err)
	}
}

func TestRunAnswersActionsAndReturnsTheOutput(t *testing.T) {
	srv := newTestServer(t)
	c := newClient(t, srv.URL)
	conv, err := c.CreateConversation(t.Context(), api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	var seen []api.StandardEventType
	var asked []api.ActionKind
	res, err := c.Run(t.Context(), api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "hello runtime",
		Config: api.JSONObject{"requireApproval": true, "requestInput": true}}, sdk.RunHandlers{
		OnAction: func(_ context.Context, a api.ActionRequest) (api.ActionResponse, error) {
			asked = append(asked, a.Kind)
			if a.Kind == api.ActionKindApproval {
				return api.ActionResponse{Approved: new(true)}, nil
			}
			return api.ActionResponse{Value: new(api.JSONValue("from the handler"))}, nil
		},
		OnEvent: func(e api.RuntimeEvent) { seen = append(seen, e.Type) },
		OnText:  func(s string) { text.WriteString(s) },
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "Echo: hello runtime from the handler"
	if !res.Succeeded() || res.Output != want || text.String() != want {
		t.Fatalf("Run = %+v (output %q, streamed %q), want %q", res.Execution, res.Output, text.String(), want)
	}
	if !reflect.DeepEqual(asked, []api.ActionKind{api.ActionKindApproval, api.ActionKindInput}) || seen[len(seen)-1] != api.StandardEventTypeRunCompleted {
		t.Fatalf("asked %v, saw %v", asked, seen)
	}

	// A refused approval is a result, not an error.
	res, err = c.Run(t.Context(), api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "x",
		Config: api.JSONObject{"requireApproval": true}}, sdk.RunHandlers{
		OnAction: func(context.Context, api.ActionRequest) (api.ActionResponse, error) {
			return api.ActionResponse{Approved: new(false)}, nil
		},
	})
	if err != nil || res.Execution.State != api.ExecutionStateFailed || res.Execution.Error.Message != "Mock execution was not approved" {
		t.Fatalf("refused Run = %+v, %v", res.Execution, err)
	}
}

// methodRewriter stands for a misbehaving gateway: it sends every request with another method.
type methodRewriter struct{ method string }

func (m methodRewriter) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Method = m.method
	return http.DefaultTransport.RoundTrip(r)
}

func TestEveryErrorCodeMapsToItsSentinel(t *testing.T) {
	srv := newTestServer(t)
	c := newClient(t, srv.URL)
	ctx := t.Context()
	conv, err := c.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	waiting := start(t, c, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "x",
		Config: api.JSONObject{"requireApproval": true}})
	action := untilAction(t, c, waiting.ID)
	if _, err := c.RespondToAction(ctx, waiting.ID, action.ID, api.ActionResponse{Approved: new(true)}); err != nil {
		t.Fatal(err)
	}
	const unknownExecution = "exec_00000000000000000000000000000000"

	// A runtime that has been closed fails every call: 500 INTERNAL_ERROR (after the retries).
	closed := newTestServer(t)
	_ = closed.runtime.Close()
	// A gateway that turns every request into a DELETE gets 405 from the server.
	wrongMethod := newClient(t, srv.URL, sdk.WithHTTPClient(&http.Client{Transport: methodRewriter{http.MethodDelete}}))

	for _, tc := range []struct {
		sentinel error
		status   int
		message  string
		call     func() error
	}{
		{sdk.ErrValidation, 400, "Invalid cancellation request", func() error {
			_, err := c.CancelExecution(ctx, waiting.ID, api.CancelExecutionRequest{Reason: new("")})
			return err
		}},
		{sdk.ErrNotFound, 404, "Execution not found: " + unknownExecution, func() error {
			_, err := c.GetExecution(ctx, unknownExecution)
			return err
		}},
		{sdk.ErrProviderNotFound, 404, "Provider not found: nope", func() error {
			_, err := c.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "nope"})
			return err
		}},
		{sdk.ErrCapabilityUnsupported, 422, "Provider mock does not support required capabilities", func() error {
			_, err := c.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock",
				RequiredCapabilities: &[]string{"extension.mcp"}})
			return err
		}},
		{sdk.ErrIdempotencyConflict, 409, "Idempotency key was already used with a different execution request", func() error {
			req := api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "a", IdempotencyKey: new("order-42")}
			if _, err := c.StartExecution(ctx, req); err != nil {
				return err
			}
			req.Input = "b"
			_, err := c.StartExecution(ctx, req)
			return err
		}},
		{sdk.ErrActionNotFound, 404, "Action not found: action_unknown", func() error {
			_, err := c.RespondToAction(ctx, waiting.ID, "action_unknown", api.ActionResponse{})
			return err
		}},
		{sdk.ErrActionAlreadyResolved, 409, "Action already resolved: " + action.ID, func() error {
			_, err := c.RespondToAction(ctx, waiting.ID, action.ID, api.ActionResponse{Approved: new(true)})
			return err
		}},
		{sdk.ErrInternal, 500, "Unexpected server error", func() error {
			_, err := newClient(t, closed.URL).GetExecution(ctx, unknownExecution)
			return err
		}},
		{sdk.ErrMethodNotAllowed, 405, "", func() error {
			_, err := wrongMethod.GetExecution(ctx, waiting.ID)
			return err
		}},
		// INVALID_STATE cannot be provoked over HTTP: the runtime abandons pending actions in
		// the same step that leaves the awaiting state, so a late answer meets
		// ACTION_NOT_FOUND. errors_test.go checks its sentinel.
	} {
		err := tc.call()
		var e *sdk.Error
		if !errors.As(err, &e) || !errors.Is(err, tc.sentinel) || e.StatusCode != tc.status {
			t.Errorf("want %v (%d), got %v", tc.sentinel, tc.status, err)
			continue
		}
		if tc.message != "" && e.Message != tc.message {
			t.Errorf("%v: message %q, want %q", tc.sentinel, e.Message, tc.message)
		}
		if errors.Is(tc.sentinel, sdk.ErrCapabilityUnsupported) {
			if e.Details["providerId"] != "mock" || !reflect.DeepEqual(e.Details["capabilities"], []any{"extension.mcp"}) {
				t.Errorf("details = %v", e.Details)
			}
		}
	}
}
