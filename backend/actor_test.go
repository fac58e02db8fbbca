package backend_test

import (
	"fmt"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The identity in the caller's context is recorded in the events its calls cause, and read
// back from the store (a reopened runtime), not only from memory.
func TestActorRecordedInRespondedAndCancelled(t *testing.T) {
	dir := t.TempDir()
	rt := openRuntime(t, dir, optsNone())
	conv := newConversation(t, rt)

	approval := start(t, rt, conv, startOpts{input: "hi", config: api.JSONObject{"requireApproval": true}})
	actionID := typed(waitForEvent(t, rt, approval.ID, api.StandardEventTypeActionRequired).Data.AsActionRequest()).ID
	if _, err := rt.RespondToAction(backend.WithActor(ctxT(t), "alice"), approval.ID, actionID, approve(true)); err != nil {
		t.Fatal(err)
	}

	running := start(t, rt, conv, startOpts{input: "a b c d e f", config: api.JSONObject{"delayMs": 10000}})
	waitForEvent(t, rt, running.ID, api.StandardEventTypeRunStarted)
	reason := "wrong prompt"
	if _, err := rt.CancelExecution(backend.WithActor(ctxT(t), "bob"), running.ID, &reason); err != nil {
		t.Fatal(err)
	}
	finalOf(t, rt, approval.ID)
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}

	rt = openRuntime(t, dir, optsNone())
	responded := eventOf(t, rt, approval.ID, api.StandardEventTypeActionResponded)
	if got, want := jsonString(responded.Data), fmt.Sprintf(`{"actionId":%q,"actor":{"id":"alice"},"approved":true}`, actionID); got != want {
		t.Errorf("action.responded data\n got %s\nwant %s", got, want)
	}
	if d := typed(responded.Data.AsActionRespondedData()); d.Actor == nil || d.Actor.ID != "alice" {
		t.Errorf("AsActionRespondedData().Actor = %+v", d.Actor)
	}
	cancelled := eventOf(t, rt, running.ID, api.StandardEventTypeRunCancelled)
	if got, want := jsonString(cancelled.Data), `{"actor":{"id":"bob"},"reason":"wrong prompt"}`; got != want {
		t.Errorf("run.cancelled data\n got %s\nwant %s", got, want)
	}
}

// No identity, or one that names nobody, records nothing: the data is exactly the reference's.
func TestActorAbsentWhenNobodyIsNamed(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	conv := newConversation(t, rt)
	for _, ctx := range []struct {
		name string
		id   string
	}{{"no identity", ""}, {"blank identity", "  "}} {
		t.Run(ctx.name, func(t *testing.T) {
			approval := start(t, rt, conv, startOpts{input: "hi", config: api.JSONObject{"requireApproval": true}})
			actionID := typed(waitForEvent(t, rt, approval.ID, api.StandardEventTypeActionRequired).Data.AsActionRequest()).ID
			if _, err := rt.RespondToAction(backend.WithActor(ctxT(t), ctx.id), approval.ID, actionID, approve(false)); err != nil {
				t.Fatal(err)
			}
			if got, want := jsonString(eventOf(t, rt, approval.ID, api.StandardEventTypeActionResponded).Data),
				fmt.Sprintf(`{"actionId":%q,"approved":false}`, actionID); got != want {
				t.Errorf("action.responded data\n got %s\nwant %s", got, want)
			}

			running := start(t, rt, conv, startOpts{input: "a b c d", config: api.JSONObject{"delayMs": 10000}})
			waitForEvent(t, rt, running.ID, api.StandardEventTypeRunStarted)
			if _, err := rt.CancelExecution(backend.WithActor(ctxT(t), ctx.id), running.ID, nil); err != nil {
				t.Fatal(err)
			}
			if got := jsonString(eventOf(t, rt, running.ID, api.StandardEventTypeRunCancelled).Data); got != `{}` {
				t.Errorf("run.cancelled data %s, want {}", got)
			}
		})
	}
}

// eventOf returns the one event of type typ of a finished execution.
func eventOf(t testing.TB, rt *backend.Runtime, id string, typ api.StandardEventType) api.RuntimeEvent {
	t.Helper()
	events, _ := finalOf(t, rt, id)
	for _, e := range events {
		if e.Type == typ {
			return e
		}
	}
	t.Fatalf("%s has no %s event in %v", id, typ, types(events))
	return api.RuntimeEvent{}
}
