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

	done := start(t, rt, conv, startOpts{input: "hello", key: "done", config: api.JsonObject{"artifactName": "a.txt", "requireApproval": true}})
	resolvedID := waitForEvent(t, rt, done.Id, api.StandardEventTypeActionRequired).Data["id"].(string)
	if _, err := rt.RespondToAction(ctxT(t), done.Id, resolvedID, approve(true)); err != nil {
		t.Fatal(err)
	}
	doneEvents, doneFinal := finalOf(t, rt, done.Id)
	doneArtifacts, _ := rt.ListArtifacts(ctxT(t), done.Id)

	waiting := start(t, rt, conv, startOpts{input: "wait", config: api.JsonObject{"requireApproval": true}})
	pendingID := waitForEvent(t, rt, waiting.Id, api.StandardEventTypeActionRequired).Data["id"].(string)
	running := start(t, rt, conv, startOpts{input: "slow", config: api.JsonObject{"delayMs": 60000}})
	waitForEvent(t, rt, running.Id, api.StandardEventTypeRunStarted)
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}

	rt2 := openRuntime(t, dir, optsNone())
	if _, err := rt2.GetConversation(ctxT(t), conv); err != nil {
		t.Fatalf("conversation lost: %v", err)
	}
	events, final := finalOf(t, rt2, done.Id)
	if jsonString(final) != jsonString(doneFinal) || jsonString(events) != jsonString(doneEvents) {
		t.Fatalf("finished execution changed across reopen")
	}
	if artifacts, _ := rt2.ListArtifacts(ctxT(t), done.Id); jsonString(artifacts) != jsonString(doneArtifacts) {
		t.Fatalf("artifacts changed: %v", artifacts)
	}
	_, err := rt2.RespondToAction(ctxT(t), done.Id, resolvedID, approve(true))
	wantCode(t, err, backend.CodeActionAlreadyResolved, "")
	if replay, replayed, err := rt2.StartExecution(ctxT(t), startReq(conv, startOpts{input: "hello", key: "done", config: api.JsonObject{"artifactName": "a.txt", "requireApproval": true}})); err != nil || !replayed || replay.Id != done.Id {
		t.Fatalf("idempotency record lost: %v %v", err, replayed)
	}

	for _, id := range []string{waiting.Id, running.Id} {
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
	_, err = rt2.RespondToAction(ctxT(t), waiting.Id, pendingID, approve(true))
	wantCode(t, err, backend.CodeActionNotFound, "Action not found: "+pendingID)
	rt2.Close()

	// A second reopen changes nothing: recovery happens once.
	rt3 := openRuntime(t, dir, optsNone())
	again, _ := finalOf(t, rt3, waiting.Id)
	if len(again) != 4 {
		t.Fatalf("second reopen: %v", types(again))
	}
}

func TestRetentionDeletesExpiredExecutions(t *testing.T) {
	rt := openRuntime(t, "", backend.Options{Retention: time.Hour})
	conv := newConversation(t, rt)
	old := start(t, rt, conv, startOpts{input: "old", key: "k", config: api.JsonObject{"artifactName": "x", "requireApproval": true}})
	actionID := waitForEvent(t, rt, old.Id, api.StandardEventTypeActionRequired).Data["id"].(string)
	rt.RespondToAction(ctxT(t), old.Id, actionID, approve(true))
	finalOf(t, rt, old.Id)
	live := start(t, rt, conv, startOpts{input: "live", config: api.JsonObject{"requireApproval": true}})
	waitForEvent(t, rt, live.Id, api.StandardEventTypeActionRequired)

	if n, err := backend.SweepExpired(rt, time.Now()); err != nil || n != 0 {
		t.Fatalf("nothing is old yet: %d %v", n, err)
	}
	n, err := backend.SweepExpired(rt, time.Now().Add(2*time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	_, err = rt.GetExecution(ctxT(t), old.Id)
	wantCode(t, err, backend.CodeNotFound, "")
	_, _, err = rt.ListEvents(ctxT(t), old.Id, 0, 0)
	wantCode(t, err, backend.CodeNotFound, "")
	_, err = rt.RespondToAction(ctxT(t), old.Id, actionID, approve(true))
	wantCode(t, err, backend.CodeNotFound, "")
	// The idempotency record went with it: the key starts a new execution.
	fresh, replayed, err := rt.StartExecution(ctxT(t), startReq(conv, startOpts{input: "other", key: "k"}))
	if err != nil || replayed || fresh.Id == old.Id {
		t.Fatalf("key after retention: %v %v", err, replayed)
	}
	if got := getExecution(t, rt, live.Id).State; got != api.ExecutionStateAwaitingApproval {
		t.Fatalf("live execution touched: %s", got)
	}
	if _, err := rt.GetConversation(ctxT(t), conv); err != nil {
		t.Fatalf("conversation deleted: %v", err)
	}
}
