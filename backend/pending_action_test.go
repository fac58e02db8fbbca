package backend_test

import (
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// TestSnapshotCarriesThePendingAction: while an execution waits for an answer its snapshot
// (GET, the listing) carries the action, exactly the action.required event's data; the answer,
// a cancel and a restart each remove it in the same commit as the state change.
func TestSnapshotCarriesThePendingAction(t *testing.T) {
	dir := t.TempDir()
	rt := openRuntime(t, dir, optsNone())
	conv := newConversation(t, rt)

	wantPending := func(id string, typ api.StandardEventType) api.ActionRequest {
		t.Helper()
		required := typed(waitForEvent(t, rt, id, typ).Data.AsActionRequest())
		got := getExecution(t, rt, id)
		if got.PendingAction == nil || jsonString(*got.PendingAction) != jsonString(required) {
			t.Fatalf("snapshot in %s carries pendingAction %s, want the action.required data %s", got.State, jsonString(got.PendingAction), jsonString(required))
		}
		page, err := rt.ListExecutions(ctxT(t), backend.ExecutionFilter{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Executions {
			if e.ID == id && jsonString(e.PendingAction) != jsonString(required) {
				t.Fatalf("listed execution carries pendingAction %s", jsonString(e.PendingAction))
			}
		}
		return required
	}
	wantNone := func(e api.Execution, when string) {
		t.Helper()
		if e.PendingAction != nil {
			t.Fatalf("%s (state %s) the snapshot still carries pendingAction %s", when, e.State, jsonString(e.PendingAction))
		}
	}

	answered := start(t, rt, conv, startOpts{input: "approve me", config: api.JSONObject{"requireApproval": true}})
	wantNone(answered, "at the start")
	action := wantPending(answered.ID, api.StandardEventTypeActionRequired)
	after, err := rt.RespondToAction(ctxT(t), answered.ID, action.ID, approve(true))
	if err != nil {
		t.Fatal(err)
	}
	wantNone(after, "after the answer")
	_, final := finalOf(t, rt, answered.ID)
	wantNone(final, "once finished")

	input := start(t, rt, conv, startOpts{input: "ask", config: api.JSONObject{"requestInput": true}})
	if got := wantPending(input.ID, api.StandardEventTypeActionRequired); got.Kind != api.ActionKindInput {
		t.Fatalf("pending action kind %s, want input", got.Kind)
	}
	reason := "not now"
	cancelled, err := rt.CancelExecution(ctxT(t), input.ID, &reason)
	if err != nil {
		t.Fatal(err)
	}
	wantNone(cancelled, "after a cancel")

	waiting := start(t, rt, conv, startOpts{input: "wait", config: api.JSONObject{"requireApproval": true}})
	wantPending(waiting.ID, api.StandardEventTypeActionRequired)
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	rt = openRuntime(t, dir, optsNone())
	wantNone(getExecution(t, rt, waiting.ID), "after a restart")
}
