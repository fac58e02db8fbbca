package backend_test

import (
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Reopening restores everything; executions the previous process left unfinished get exactly
// one run.failed, and their pending actions answer ACTION_NOT_FOUND.
func TestReopenRestoresAndRecovers(t *testing.T) {
	dir := t.TempDir()
	rt := openRuntime(t, dir, optsNone())
	conv := newConversation(t, rt)

	done := start(t, rt, conv, startOpts{input: "hello", key: "done", config: api.JSONObject{"artifactName": "a.txt", "requireApproval": true}})
	resolvedID := typed(waitForEvent(t, rt, done.ID, api.StandardEventTypeActionRequired).Data.AsActionRequest()).ID
	if _, err := rt.RespondToAction(ctxT(t), done.ID, resolvedID, approve(true)); err != nil {
		t.Fatal(err)
	}
	doneEvents, doneFinal := finalOf(t, rt, done.ID)
	doneArtifacts, _ := rt.ListArtifacts(ctxT(t), done.ID)

	waiting := start(t, rt, conv, startOpts{input: "wait", config: api.JSONObject{"requireApproval": true}})
	pendingID := typed(waitForEvent(t, rt, waiting.ID, api.StandardEventTypeActionRequired).Data.AsActionRequest()).ID
	running := start(t, rt, conv, startOpts{input: "slow", config: api.JSONObject{"delayMs": 60000}})
	waitForEvent(t, rt, running.ID, api.StandardEventTypeRunStarted)
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}

	rt2 := openRuntime(t, dir, optsNone())
	if _, err := rt2.GetConversation(ctxT(t), conv); err != nil {
		t.Fatalf("conversation lost: %v", err)
	}
	events, final := finalOf(t, rt2, done.ID)
	if jsonString(final) != jsonString(doneFinal) || jsonString(events) != jsonString(doneEvents) {
		t.Fatalf("finished execution changed across reopen")
	}
	if artifacts, _ := rt2.ListArtifacts(ctxT(t), done.ID); jsonString(artifacts) != jsonString(doneArtifacts) {
		t.Fatalf("artifacts changed: %v", artifacts)
	}
	_, err := rt2.RespondToAction(ctxT(t), done.ID, resolvedID, approve(true))
	wantCode(t, err, backend.CodeActionAlreadyResolved, "")
	if replay, replayed, err := rt2.StartExecution(ctxT(t), startReq(conv, startOpts{input: "hello", key: "done", config: api.JSONObject{"artifactName": "a.txt", "requireApproval": true}})); err != nil || !replayed || replay.ID != done.ID {
		t.Fatalf("idempotency record lost: %v %v", err, replayed)
	}

	for _, id := range []string{waiting.ID, running.ID} {
		events := wantFailed(t, rt2, id, "Runtime restarted before the execution finished")
		n := 0
		for _, e := range events {
			if e.Type == api.StandardEventTypeRunFailed {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d run.failed", n)
		}
	}
	_, err = rt2.RespondToAction(ctxT(t), waiting.ID, pendingID, approve(true))
	wantCode(t, err, backend.CodeActionNotFound, "Action not found: "+pendingID)
	rt2.Close()

	// A second reopen changes nothing: recovery happens once.
	rt3 := openRuntime(t, dir, optsNone())
	again, _ := finalOf(t, rt3, waiting.ID)
	if len(again) != 4 {
		t.Fatalf("second reopen: %v", types(again))
	}
}

func TestRetentionDeletesExpiredExecutions(t *testing.T) {
	rt := openRuntime(t, "", backend.Options{Retention: time.Hour})
	conv := newConversation(t, rt)
	old := start(t, rt, conv, startOpts{input: "old", key: "k", config: api.JSONObject{"artifactName": "x", "requireApproval": true}})
	actionID := typed(waitForEvent(t, rt, old.ID, api.StandardEventTypeActionRequired).Data.AsActionRequest()).ID
	rt.RespondToAction(ctxT(t), old.ID, actionID, approve(true))
	finalOf(t, rt, old.ID)
	live := start(t, rt, conv, startOpts{input: "live", config: api.JSONObject{"requireApproval": true}})
	waitForEvent(t, rt, live.ID, api.StandardEventTypeActionRequired)

	if n, err := backend.SweepExpired(rt, time.Now()); err != nil || n != 0 {
		t.Fatalf("nothing is old yet: %d %v", n, err)
	}
	n, err := backend.SweepExpired(rt, time.Now().Add(2*time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	_, err = rt.GetExecution(ctxT(t), old.ID)
	wantCode(t, err, backend.CodeNotFound, "")
	_, _, err = rt.ListEvents(ctxT(t), old.ID, 0, 0)
	wantCode(t, err, backend.CodeNotFound, "")
	_, err = rt.RespondToAction(ctxT(t), old.ID, actionID, approve(true))
	wantCode(t, err, backend.CodeNotFound, "")
	// The idempotency record went with it: the key starts a new execution.
	fresh, replayed, err := rt.StartExecution(ctxT(t), startReq(conv, startOpts{input: "other", key: "k"}))
	if err != nil || replayed || fresh.ID == old.ID {
		t.Fatalf("key after retention: %v %v", err, replayed)
	}
	if got := getExecution(t, rt, live.ID).State; got != api.ExecutionStateAwaitingApproval {
		t.Fatalf("live execution touched: %s", got)
	}
	if _, err := rt.GetConversation(ctxT(t), conv); err != nil {
		t.Fatalf("conversation deleted: %v", err)
	}
}
