package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/postgres"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// planner makes one row per target for every event of an execution (two targets: two lanes
// per execution).
type planner struct{}

func (planner) Wants(api.StandardEventType) bool { return true }
func (planner) Committed()                       {}
func (planner) Notifications(executionID string, e store.Event, exec api.Execution, at time.Time) ([]store.Notification, error) {
	var out []store.Notification
	for _, t := range []byte{'x', 'y'} {
		var target [store.TargetIDLen]byte
		target[0] = t
		out = append(out, store.Notification{ExecutionID: executionID, Sequence: e.Sequence, Target: target,
			URL: "http://127.0.0.1/hook", Body: e.JSON, CreatedAt: at, NextAttempt: at})
	}
	return out, nil
}

// sender is what the runtime's webhook sender does with the outbox, without the HTTP: take
// due heads, "deliver" them, commit the outcome; lanes in flight are busy.
type sender struct {
	s      *postgres.Store
	mu     sync.Mutex
	flying map[string]bool
}

func (snd *sender) busy(lane string) bool {
	snd.mu.Lock()
	defer snd.mu.Unlock()
	return snd.flying[lane]
}

// Two nodes sending from one outbox never hand one row to both, and each lane is delivered
// in sequence order across them.
func TestOutboxOneSenderPerRowAcrossNodes(t *testing.T) {
	dsn := newDatabase(t)
	a, b := open(t, dsn, "a"), open(t, dsn, "b")
	a.SetOutboxPlanner(planner{})
	const executions, events = 20, 5
	var batch store.Batch
	for i := range executions {
		rec := execution(i+1, api.ExecutionStateRunning, "a")
		batch.Executions = append(batch.Executions, rec)
		for seq := int64(1); seq <= events; seq++ {
			batch.Events = append(batch.Events, event(rec.Execution.ID, seq, api.StandardEventTypeOutputTextDelta))
		}
	}
	commit(t, a, &batch)
	if n, err := b.PendingNotifications(); err != nil || n != executions*events*2 {
		t.Fatalf("pending rows: %d, %v; want %d", n, err, executions*events*2)
	}

	var mu sync.Mutex
	handed := map[string]int{}        // row → how many times a sender got it
	delivered := map[string][]int64{} // lane → sequences in delivery order
	var nodes sync.WaitGroup
	for _, s := range []*postgres.Store{a, b} {
		// One dispatcher per node, as the runtime's sender has: it marks a row's lane busy
		// before handing it to a worker, and the worker clears it once the outcome committed.
		snd := &sender{s: s, flying: map[string]bool{}}
		nodes.Go(func() {
			var workers sync.WaitGroup
			defer workers.Wait()
			deadline := time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) {
				due, _, _, err := s.OutboxHeads(time.Now(), snd.busy, 4)
				if err != nil {
					t.Error(err)
					return
				}
				if len(due) == 0 {
					if n, _ := s.PendingNotifications(); n == 0 {
						return
					}
					time.Sleep(time.Millisecond)
					continue
				}
				for _, n := range due {
					mu.Lock()
					handed[fmt.Sprintf("%s/%c/%d", n.ExecutionID, n.Target[0], n.Sequence)]++
					delivered[n.Lane()] = append(delivered[n.Lane()], n.Sequence)
					mu.Unlock()
					snd.mu.Lock()
					snd.flying[n.Lane()] = true
					snd.mu.Unlock()
					workers.Go(func() {
						time.Sleep(5 * time.Millisecond) // the HTTP request: the other node scans meanwhile
						if err := s.Commit(&store.Batch{OutboxResults: []store.OutboxResult{{Notification: n, Outcome: store.OutboxDelivered}}}); err != nil {
							t.Error(err)
						}
						snd.mu.Lock()
						delete(snd.flying, n.Lane())
						snd.mu.Unlock()
					})
				}
			}
			t.Error("the outbox did not drain in 30s")
		})
	}
	nodes.Wait()
	if len(handed) != executions*events*2 {
		t.Fatalf("%d rows handed out, want %d", len(handed), executions*events*2)
	}
	for row, n := range handed {
		if n != 1 {
			t.Errorf("row %s handed to senders %d times", row, n)
		}
	}
	for lane, seqs := range delivered {
		for i, seq := range seqs {
			if seq != int64(i+1) {
				t.Fatalf("lane %q delivered out of order: %v", lane, seqs)
			}
		}
	}
}

// A node that took a row and died holds it only until its claim expires; then another node
// gets it. Before that, the other node is told when to look again.
func TestOutboxClaimExpires(t *testing.T) {
	dsn := newDatabase(t)
	open := func(node string) *postgres.Store {
		s, err := postgres.Open(context.Background(), postgres.Config{DSN: dsn, Node: node, OutboxClaim: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open("a"), open("b")
	a.SetOutboxPlanner(planner{})
	rec := execution(1, api.ExecutionStateRunning, "a")
	commit(t, a, &store.Batch{Executions: []store.Execution{rec}, Events: []store.StoredEvent{event(rec.Execution.ID, 1, api.StandardEventTypeRunCompleted)}})
	never := func(string) bool { return false }
	taken, _, _, err := a.OutboxHeads(time.Now(), never, 10)
	if err != nil || len(taken) != 2 {
		t.Fatalf("node a took %d rows (%v), want both lanes' heads", len(taken), err)
	}
	// a "dies" holding them: no result is ever committed.
	due, nextDue, oldest, err := b.OutboxHeads(time.Now(), never, 10)
	if err != nil || len(due) != 0 {
		t.Fatalf("node b got %d rows node a holds (%v)", len(due), err)
	}
	if nextDue.IsZero() || time.Until(nextDue) > 2*time.Second || oldest.IsZero() {
		t.Fatalf("node b should look again when the claim ends (~1s): nextDue %v, oldest %v", nextDue, oldest)
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(due) == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		if due, _, _, err = b.OutboxHeads(time.Now(), never, 10); err != nil {
			t.Fatal(err)
		}
	}
	if len(due) != 2 {
		t.Fatalf("after the claim expired node b got %d rows, want 2", len(due))
	}
	// a's late result no longer applies to the rows b holds now; b's does.
	stale := store.OutboxResult{Notification: taken[0], Outcome: store.OutboxDelivered}
	commit(t, a, &store.Batch{OutboxResults: []store.OutboxResult{stale}})
	if n, _ := b.PendingNotifications(); n != 2 {
		t.Fatalf("a stale result from the dead claim removed a row b holds: %d pending", n)
	}
	for _, n := range due {
		commit(t, b, &store.Batch{OutboxResults: []store.OutboxResult{{Notification: n, Outcome: store.OutboxDelivered}}})
	}
	if n, _ := b.PendingNotifications(); n != 0 {
		t.Fatalf("%d rows pending after b delivered them", n)
	}
}
