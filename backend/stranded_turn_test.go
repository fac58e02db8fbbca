package backend_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// A turn waiting in an enqueue conversation whose cancellation the store refuses is stranded;
// once the store accepts writes again the stranded loop fails it, and a failed execution waits
// for nothing: waitingFor is gone from the answer, from the live read and from the store (read
// again after a restart), as it is when restart recovery fails a waiting turn.
func TestStrandedQueuedTurnFailsWithoutWaitingFor(t *testing.T) {
	dir := t.TempDir()
	g := newGated()
	rt := openRuntime(t, dir, backend.Options{Providers: []backend.Provider{g}})
	conv := conversationWith(t, rt, api.BusyPolicyEnqueue)
	a := mustStartGated(t, rt, conv, "a", "")
	waitState(t, rt, a.ID, api.ExecutionStateRunning)
	b := mustStartGated(t, rt, conv, "b", "")
	if b.State != api.ExecutionStateQueued || !slices.Equal(b.WaitingFor, []string{a.ID}) {
		t.Fatalf("b at its start: %s waiting for %v, want queued behind %s", b.State, b.WaitingFor, a.ID)
	}

	backend.FailWrites(rt, errDiskFull)
	// The cancellation's commit is refused and strands b before the call returns; the call then
	// waits for the failure the stranded loop owes b, and gives up when its context ends.
	short, cancel := context.WithTimeout(ctxT(t), 10*time.Millisecond)
	_, _ = rt.CancelExecution(short, b.ID, nil)
	cancel()
	backend.FailWrites(rt, nil)
	answer, err := rt.CancelExecution(ctxT(t), b.ID, nil) // joins the failure, or reads it
	if err != nil {
		t.Fatalf("cancel of the stranded turn: %v", err)
	}
	if answer.State != api.ExecutionStateFailed || answer.WaitingFor != nil {
		t.Fatalf("the cancellation answered %s waiting for %v, want failed waiting for nothing", answer.State, answer.WaitingFor)
	}
	if exec := getExecution(t, rt, b.ID); exec.WaitingFor != nil {
		t.Fatalf("the failed turn reads as waiting for %v", exec.WaitingFor)
	}
	g.open("a")
	waitState(t, rt, a.ID, api.ExecutionStateSucceeded)
	rt.Close()

	reopened := openRuntime(t, dir, backend.Options{Providers: []backend.Provider{newGated()}})
	if exec := getExecution(t, reopened, b.ID); exec.State != api.ExecutionStateFailed || exec.WaitingFor != nil {
		t.Fatalf("after a restart the turn reads %s waiting for %v, want failed waiting for nothing", exec.State, exec.WaitingFor)
	}
}
