package backend_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

func approve(v bool) func() (api.ActionResponse, error) {
	return func() (api.ActionResponse, error) { return api.ActionResponse{Approved: &v}, nil }
}

func TestApprovalPausesAndResumes(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	conv := newConversation(t, rt)
	exec := start(t, rt, conv, startOpts{input: "hello", config: api.JSONObject{"requireApproval": true}, capabilities: []string{"action.approval"}})
	required := waitForEvent(t, rt, exec.ID, api.StandardEventTypeActionRequired)
	actionID := typed(required.Data.AsActionRequest()).ID
	if got := getExecution(t, rt, exec.ID).State; got != api.ExecutionStateAwaitingApproval {
		t.Fatalf("state %s, want awaiting_approval", got)
	}
	after, err := rt.RespondToAction(ctxT(t), exec.ID, actionID, approve(true))
	if err != nil || after.State != api.ExecutionStateRunning {
		t.Fatalf("respond: %v, state %s", err, after.State)
	}
	events := collect(t, rt, exec.ID, 0)
	if last := events[len(events)-1]; last.Type != api.StandardEventTypeRunCompleted {
		t.Fatalf("last event %s", last.Type)
	}
	_, err = rt.RespondToAction(ctxT(t), exec.ID, actionID, approve(true))
	wantCode(t, err, backend.CodeActionAlreadyResolved, "Action already resolved: "+actionID)
}

func TestActionResponsesAndErrors(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	conv := newConversation(t, rt)
	exec := start(t, rt, conv, startOpts{input: "hi", config: api.JSONObject{"requireApproval": true}})
	required := waitForEvent(t, rt, exec.ID, api.StandardEventTypeActionRequired)
	actionID := typed(required.Data.AsActionRequest()).ID
	if !regexp.MustCompile(`^action_[0-9a-f]{32}$`).MatchString(actionID) {
		t.Fatalf("action id %q", actionID)
	}
	wantData := fmt.Sprintf(`{"createdAt":%q,"description":"Synthetic approval used by the reference provider.","executionId":%q,"id":%q,"kind":"approval","payload":{},"title":"Approve mock execution"}`,
		typed(required.Data.AsActionRequest()).CreatedAt, exec.ID, actionID)
	if got := jsonString(required.Data); got != wantData {
		t.Fatalf("action.required data\n got %s\nwant %s", got, wantData)
	}

	// Unknown execution, unknown action, another execution's action.
	_, err := rt.RespondToAction(ctxT(t), "exec_missing", actionID, approve(true))
	wantCode(t, err, backend.CodeNotFound, "Execution not found: exec_missing")
	_, err = rt.RespondToAction(ctxT(t), exec.ID, "action_unknown", approve(true))
	wantCode(t, err, backend.CodeActionNotFound, "Action not found: action_unknown")
	other := start(t, rt, conv, startOpts{input: "other"})
	_, err = rt.RespondToAction(ctxT(t), other.ID, actionID, approve(true))
	wantCode(t, err, backend.CodeActionNotFound, "Action not found: "+actionID)

	// A body error comes last and leaves the action pending.
	bodyErr := &backend.Error{Code: backend.CodeValidation, Message: "Invalid action response"}
	_, err = rt.RespondToAction(ctxT(t), exec.ID, actionID, func() (api.ActionResponse, error) { return api.ActionResponse{}, bodyErr })
	if err != bodyErr {
		t.Fatalf("decode error not returned as is: %v", err)
	}
	if got := getExecution(t, rt, exec.ID).State; got != api.ExecutionStateAwaitingApproval {
		t.Fatalf("after invalid body: %s", got)
	}

	// Denial: the mock fails unless approved is exactly true.
	if _, err := rt.RespondToAction(ctxT(t), exec.ID, actionID, approve(false)); err != nil {
		t.Fatal(err)
	}
	events := wantFailed(t, rt, exec.ID, "Mock execution was not approved")
	responded := events[len(events)-2]
	if responded.Type != api.StandardEventTypeActionResponded || jsonString(responded.Data) != fmt.Sprintf(`{"actionId":%q,"approved":false}`, actionID) {
		t.Fatalf("action.responded %v", responded)
	}
	// Answered before: 409 even with an invalid body (decode is never reached).
	_, err = rt.RespondToAction(ctxT(t), exec.ID, actionID, func() (api.ActionResponse, error) { return api.ActionResponse{}, bodyErr })
	wantCode(t, err, backend.CodeActionAlreadyResolved, "")
}

func TestInputActionValueIsDeliveredToTheProvider(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	exec := start(t, rt, newConversation(t, rt), startOpts{input: "hello", config: api.JSONObject{"requestInput": true}})
	required := waitForEvent(t, rt, exec.ID, api.StandardEventTypeActionRequired)
	if typed(required.Data.AsActionRequest()).Kind != "input" || typed(required.Data.AsActionRequest()).Title != "Provide mock input" || typed(required.Data.AsActionRequest()).Description != nil {
		t.Fatalf("input action %v", required.Data)
	}
	if got := getExecution(t, rt, exec.ID).State; got != api.ExecutionStateAwaitingInput {
		t.Fatalf("state %s", got)
	}
	var value api.JSONValue = "synthetic response"
	_, err := rt.RespondToAction(ctxT(t), exec.ID, typed(required.Data.AsActionRequest()).ID, func() (api.ActionResponse, error) {
		return api.ActionResponse{Value: &value}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	events, final := finalOf(t, rt, exec.ID)
	checkLog(t, final, events)
	if *final.FinalOutput != "Echo: hello synthetic response" {
		t.Fatalf("final output %q", *final.FinalOutput)
	}
	if responded := events[3]; jsonString(responded.Data) != fmt.Sprintf(`{"actionId":%q}`, typed(required.Data.AsActionRequest()).ID) {
		t.Fatalf("action.responded without approved must carry only actionId: %v", responded.Data)
	}
}

// One pending action at a time: a second request while one is pending is INVALID_STATE; the
// response (metadata included) reaches the provider.
func TestOnePendingActionAtATime(t *testing.T) {
	var rt *backend.Runtime
	got := make(chan api.ActionResponse, 1)
	secondErr := make(chan error, 1)
	p := &scripted{run: func(ctx context.Context, run *backend.Run) (backend.Result, error) {
		go func() {
			waitForState(rt, run.ExecutionID(), api.ExecutionStateAwaitingApproval)
			_, err := run.RequestAction(ctx, backend.ActionInput{Kind: api.ActionKindInput, Title: "second"})
			secondErr <- err
		}()
		resp, err := run.RequestAction(ctx, backend.ActionInput{Kind: api.ActionKindApproval, Title: "first"})
		got <- resp
		return backend.Result{FinalOutput: "ok"}, err
	}}
	rt = scriptedRuntime(t, backend.Options{}, p)
	exec := startScripted(t, rt, newConversation(t, rt))
	required := waitForEvent(t, rt, exec.ID, api.StandardEventTypeActionRequired)
	wantCode(t, <-secondErr, backend.CodeInvalidState, "Provider requested an action while execution was awaiting_approval")
	meta := api.JSONObject{"who": "tester"}
	_, err := rt.RespondToAction(ctxT(t), exec.ID, typed(required.Data.AsActionRequest()).ID, func() (api.ActionResponse, error) {
		yes := true
		return api.ActionResponse{Approved: &yes, Metadata: &meta}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	resp := <-got
	if resp.Approved == nil || !*resp.Approved || resp.Metadata == nil || (*resp.Metadata)["who"] != "tester" {
		t.Fatalf("provider got %+v", resp)
	}
	events, final := finalOf(t, rt, exec.ID)
	checkLog(t, final, events)
	if final.State != api.ExecutionStateSucceeded || len(events) != 6 {
		t.Fatalf("final %s events %v", final.State, types(events))
	}
}

// waitForState polls (from a provider goroutine, which may call the runtime freely) until the
// execution reaches state.
func waitForState(rt *backend.Runtime, id string, state api.ExecutionState) {
	deadline := time.Now().Add(testTimeout)
	for time.Now().Before(deadline) {
		if exec, err := rt.GetExecution(context.Background(), id); err == nil && exec.State == state {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// Provider requests an action and returns success while it is pending → failed "Provider
// finished with an unresolved action"; its pending request fails with that message; a later
// response answers ACTION_NOT_FOUND. Same when the provider throws instead.
func TestUnresolvedActionFailsTheExecution(t *testing.T) {
	for _, tc := range []struct {
		name    string
		outcome error
		message string
	}{
		{"returns success", nil, "Provider finished with an unresolved action"},
		{"throws", errors.New("synthetic provider failure"), "synthetic provider failure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rt *backend.Runtime
			pendingErr := make(chan error, 1)
			p := &scripted{run: func(ctx context.Context, run *backend.Run) (backend.Result, error) {
				go func() {
					_, err := run.RequestAction(context.Background(), backend.ActionInput{Kind: api.ActionKindApproval, Title: "pending"})
					pendingErr <- err
				}()
				waitForState(rt, run.ExecutionID(), api.ExecutionStateAwaitingApproval)
				return backend.Result{FinalOutput: "x"}, tc.outcome
			}}
			rt = scriptedRuntime(t, backend.Options{}, p)
			exec := startScripted(t, rt, newConversation(t, rt))
			events := wantFailed(t, rt, exec.ID, tc.message)
			if err := <-pendingErr; err == nil || err.Error() != tc.message {
				t.Fatalf("pending request ended with %v, want %q", err, tc.message)
			}
			actionID := typed(events[2].Data.AsActionRequest()).ID
			_, err := rt.RespondToAction(ctxT(t), exec.ID, actionID, approve(true))
			wantCode(t, err, backend.CodeActionNotFound, "Action not found: "+actionID)
		})
	}
}

// Concurrent responses to one action: exactly one applies it, the others are told it was
// already resolved, and there is one action.responded.
func TestConcurrentResponsesResolveOnce(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	exec := start(t, rt, newConversation(t, rt), startOpts{input: "x", config: api.JSONObject{"requireApproval": true}})
	actionID := typed(waitForEvent(t, rt, exec.ID, api.StandardEventTypeActionRequired).Data.AsActionRequest()).ID
	const n = 10
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := rt.RespondToAction(ctxT(t), exec.ID, actionID, approve(true))
			errs <- err
		}()
	}
	applied := 0
	for range n {
		err := <-errs
		switch backend.ErrorCode(err) {
		case "":
			if err != nil {
				t.Fatal(err)
			}
			applied++
		case backend.CodeActionAlreadyResolved:
		default:
			t.Fatalf("unexpected %v", err)
		}
	}
	events, final := finalOf(t, rt, exec.ID)
	checkLog(t, final, events)
	responded := 0
	for _, e := range events {
		if e.Type == api.StandardEventTypeActionResponded {
			responded++
		}
	}
	if applied != 1 || responded != 1 || final.State != api.ExecutionStateSucceeded {
		t.Fatalf("applied %d, responded events %d, state %s", applied, responded, final.State)
	}
}
