package backend_test

import (
	"context"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/internal/pgtest"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// asker is a provider whose run "ask" waits on an approval and whose other runs end at once:
// a turn with a pending action that a newer turn interrupts.
func asker() *scripted {
	return &scripted{id: "asker", run: func(ctx context.Context, run *backend.Run) (backend.Result, error) {
		if run.Input() == "ask" {
			if _, err := run.RequestAction(ctx, backend.ActionInput{Kind: api.ActionKindApproval, Title: "delete the file?"}); err != nil {
				return backend.Result{}, err
			}
		}
		return backend.Result{FinalOutput: "done: " + run.Input()}, nil
	}}
}

// interruptAskingTurn starts "ask" in an interrupt conversation on rt, waits for its approval,
// then starts "next", which interrupts it; it returns both once the first is cancelled.
func interruptAskingTurn(t *testing.T, rt *backend.Runtime) (asked api.Execution, actionID string, next api.Execution) {
	t.Helper()
	conv := conversationWith(t, rt, api.BusyPolicyInterrupt)
	asked, _, err := rt.StartExecution(ctxT(t), startReq(conv, startOpts{provider: "asker", input: "ask"}))
	if err != nil {
		t.Fatal(err)
	}
	required := waitForEvent(t, rt, asked.ID, api.StandardEventTypeActionRequired)
	action := typed(required.Data.AsActionRequest())
	next, _, err = rt.StartExecution(ctxT(t), startReq(conv, startOpts{provider: "asker", input: "next"}))
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, rt, asked.ID, api.ExecutionStateCancelled)
	return asked, action.ID, next
}

// checkInterruptRecorded reads the interrupted turn from rt (a node that did not run it, or the
// same store reopened): its snapshot keeps the reason, and an answer to its abandoned action is
// still 404 ACTION_NOT_FOUND (docs/protocol.md §7.2) but says the turn was interrupted, by whom.
func checkInterruptRecorded(t *testing.T, rt *backend.Runtime, asked, actionID, next string) {
	t.Helper()
	exec := getExecution(t, rt, asked)
	if exec.State != api.ExecutionStateCancelled || exec.CancelReason == nil || *exec.CancelReason != "Interrupted by "+next {
		t.Fatalf("the interrupted turn's snapshot: %s", jsonString(exec))
	}
	_, err := rt.RespondToAction(ctxT(t), asked, actionID, func() (api.ActionResponse, error) {
		yes := true
		return api.ActionResponse{Approved: &yes}, nil
	})
	e := wantCode(t, err, backend.CodeActionNotFound, "")
	if !strings.Contains(e.Message, actionID) || !strings.Contains(e.Message, "the turn was interrupted by "+next) {
		t.Fatalf("the answer to the interrupted turn's action says %q", e.Message)
	}
}

// On bbolt: the reason is in the stored record, read back after the runtime is reopened.
func TestInterruptedTurnKeepsItsReasonOnBolt(t *testing.T) {
	dir := t.TempDir()
	rt := openRuntime(t, dir, backend.Options{Providers: []backend.Provider{asker()}})
	asked, actionID, next := interruptAskingTurn(t, rt)
	checkInterruptRecorded(t, rt, asked.ID, actionID, next.ID)
	waitState(t, rt, next.ID, api.ExecutionStateSucceeded)
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	reopened := openRuntime(t, dir, backend.Options{Providers: []backend.Provider{asker()}})
	checkInterruptRecorded(t, reopened, asked.ID, actionID, next.ID)
}

// On PostgreSQL: node-a runs both turns, node-b reads the record from the shared store.
func TestInterruptedTurnKeepsItsReasonOnPostgres(t *testing.T) {
	dsn := pgtest.Start(t).NewDatabase(t)
	nodeA := openPostgresNode(t, dsn, "node-a", backend.Options{Providers: []backend.Provider{asker()}})
	nodeB := openPostgresNode(t, dsn, "node-b", backend.Options{Providers: []backend.Provider{asker()}})
	asked, actionID, next := interruptAskingTurn(t, nodeA)
	checkInterruptRecorded(t, nodeA, asked.ID, actionID, next.ID)
	checkInterruptRecorded(t, nodeB, asked.ID, actionID, next.ID)
}
