package backend_test

import (
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

func TestCancelRunningExecution(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	conv := newConversation(t, rt)
	exec := start(t, rt, conv, startOpts{input: "a b c d e f", config: api.JsonObject{"delayMs": 10000}})
	waitForEvent(t, rt, exec.Id, api.StandardEventTypeRunStarted)
	reason := "caller stopped"
	final, err := rt.CancelExecution(ctxT(t), exec.Id, &reason)
	if err != nil || final.State != api.ExecutionStateCancelled || final.EndedAt == nil {
		t.Fatalf("cancel: %v %+v", err, final)
	}
	events := collect(t, rt, exec.Id, 0)
	last := events[len(events)-1]
	if last.Type != api.StandardEventTypeRunCancelled || jsonString(last.Data) != `{"reason":"caller stopped"}` {
		t.Fatalf("last event %s %v", last.Type, last.Data)
	}
}
