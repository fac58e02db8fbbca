package backend_test

import (
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

func approve(v bool) func() (api.ActionResponse, error) {
	return func() (api.ActionResponse, error) { return api.ActionResponse{Approved: &v}, nil }
}

func TestApprovalPausesAndResumes(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	conv := newConversation(t, rt)
	exec := start(t, rt, conv, startOpts{input: "hello", config: api.JsonObject{"requireApproval": true}, capabilities: []string{"action.approval"}})
	required := waitForEvent(t, rt, exec.Id, api.StandardEventTypeActionRequired)
	actionID, _ := required.Data["id"].(string)
	if got := getExecution(t, rt, exec.Id).State; got != api.ExecutionStateAwaitingApproval {
		t.Fatalf("state %s, want awaiting_approval", got)
	}
	after, err := rt.RespondToAction(ctxT(t), exec.Id, actionID, approve(true))
	if err != nil || after.State != api.ExecutionStateRunning {
		t.Fatalf("respond: %v, state %s", err, after.State)
	}
	events := collect(t, rt, exec.Id, 0)
	if last := events[len(events)-1]; last.Type != api.StandardEventTypeRunCompleted {
		t.Fatalf("last event %s", last.Type)
	}
	_, err = rt.RespondToAction(ctxT(t), exec.Id, actionID, approve(true))
	wantCode(t, err, backend.CodeActionAlreadyResolved, "Action already resolved: "+actionID)
}
