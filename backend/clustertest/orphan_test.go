package clustertest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/postgres"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Liveness (issue 44, item 1): a node that owns an unfinished execution it does not run — a
// claim that missed it, a goroutine lost — notices it within a lease and fails it with exactly
// one run.failed; a :cancel of it, on its owner or on another node, is answered meanwhile with
// that failure instead of waiting for an owner that will never answer.
func TestOrphanIsFailedByItsOwner(t *testing.T) {
	nodes := startCluster(t, clusterOpts{}, "a", "b")
	a := nodes[0]
	id := plantOrphan(t, a)

	cancelled := make([]api.Execution, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			exec, err := n.rt.CancelExecution(ctxT(t), id, nil)
			if err != nil {
				t.Errorf("CancelExecution on %s: %v", n.name, err)
			}
			cancelled[i] = exec
		})
	}
	for _, n := range nodes {
		events := follow(t, n, id, 0)
		checkComplete(t, "the orphan's log on "+n.name, events)
		if last := events[len(events)-1]; last.Type != api.StandardEventTypeRunFailed {
			t.Fatalf("the orphan ended with %s on %s, want run.failed", last.Type, n.name)
		}
	}
	wg.Wait()
	for i, exec := range cancelled {
		if exec.State != api.ExecutionStateFailed {
			t.Errorf("CancelExecution on %s answered state %q, want the failure", nodes[i].name, exec.State)
		}
	}
}

// plantOrphan writes, through a store handle of its own, an execution that n owns and that
// runs nowhere: a copy of a finished execution of n's, running again under a new id, its first
// two events (run.queued, run.started) copied too.
func plantOrphan(t *testing.T, n *node) string {
	t.Helper()
	conv := newConversation(t, n)
	done := start(t, n, mockRequest(conv, "template", api.JSONObject{"delayMs": 0}))
	template := follow(t, n, done.ID, 0)
	st, err := postgres.Open(context.Background(), postgres.Config{DSN: n.dsn, Node: n.name})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec, found, err := st.Execution(done.ID)
	if err != nil || !found {
		t.Fatalf("the template's record: %v, %v", found, err)
	}
	id := fmt.Sprintf("exec_%032x", 0x0a11)
	rec.Execution.ID = id
	rec.Execution.State = api.ExecutionStateRunning
	rec.Execution.EndedAt, rec.Execution.Error, rec.Execution.FinalOutput = nil, nil, nil
	rec.Owner = n.name
	batch := &store.Batch{Executions: []store.Execution{rec}}
	for _, e := range template[:2] {
		raw := []byte(strings.ReplaceAll(string(e.JSON), done.ID, id))
		batch.Events = append(batch.Events, store.StoredEvent{ExecutionID: id, Scope: store.ScopeOf(rec),
			Event: store.Event{Sequence: e.Sequence, Type: e.Type, JSON: raw}})
	}
	if err := st.Commit(batch); err != nil {
		t.Fatalf("plant the orphan: %v", err)
	}
	return id
}

// deafStore never lists the commands posted for its node: an owner that is alive (it renews
// its lease, runs its executions) but stuck for whatever reason on the side that answers.
type deafStore struct{ *postgres.Store }

func (deafStore) PendingCommands(context.Context) ([]store.Command, error) { return nil, nil }

// A :cancel on another node than the owner is answered within the bound (two leases) whatever
// the owner's state: an owner alive but not answering makes it UNAVAILABLE (the cancel stays
// posted to it), never a wait as long as the caller's.
func TestCancelOfAStuckOwnerIsAnswered(t *testing.T) {
	a := startCluster(t, clusterOpts{wrap: func(s *postgres.Store) store.Store { return deafStore{s} }}, "a")[0]
	b := openNode(t, a.dsn, "b", clusterOpts{})
	conv := newConversation(t, a)
	exec := start(t, a, mockRequest(conv, "wait", api.JSONObject{"requireApproval": true}))
	approvalAction(t, b, exec.ID)
	_, err := b.rt.CancelExecution(ctxT(t), exec.ID, nil)
	wantCode(t, err, backend.CodeUnavailable)
	if got, err := a.rt.GetExecution(ctxT(t), exec.ID); err != nil || got.State.Terminal() {
		t.Fatalf("the execution after the unanswered cancel: %s, %v; want it still running on a", got.State, err)
	}
}
