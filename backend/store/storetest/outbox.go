package storetest

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// planner is the suite's OutboxPlanner: a row per target for every run.completed and
// output.text.done, whose body names the execution's state as the transaction leaves it.
type planner struct {
	targets   [][store.TargetIDLen]byte
	committed atomic.Int64
}

func (p *planner) Wants(typ api.StandardEventType) bool {
	return typ == api.StandardEventTypeRunCompleted || typ == api.StandardEventTypeOutputTextDone
}

func (p *planner) Notifications(executionID string, e store.Event, exec api.Execution, at time.Time) ([]store.Notification, error) {
	var out []store.Notification
	for _, target := range p.targets {
		out = append(out, store.Notification{ExecutionID: executionID, Sequence: e.Sequence, Target: target,
			URL: "https://hooks.example/" + string(target[:1]), Body: []byte(fmt.Sprintf(`{"state":%q,"sequence":%d}`, exec.State, e.Sequence)),
			CreatedAt: at, NextAttempt: at})
	}
	return out, nil
}

func (p *planner) Committed() { p.committed.Add(1) }

func target(c byte) [store.TargetIDLen]byte {
	var t [store.TargetIDLen]byte
	for i := range t {
		t[i] = c
	}
	return t
}

func lane(executionID string, c byte) string {
	t := target(c)
	return executionID + string(t[:])
}

// The outbox: rows made by the planner in the commit that writes their events (with the
// execution as that commit leaves it), heads per lane (execution × target) in sequence order,
// the sender's results, and retention.
func testOutbox(t *testing.T, open func(t *testing.T) store.Store) {
	s := openStore(t, open)
	p := &planner{targets: [][store.TargetIDLen]byte{target('a'), target('b')}}
	s.SetOutboxPlanner(p)
	x, y := executionID(70), executionID(71)
	running := execution(70, 70, api.ExecutionStateRunning, "")
	done := running
	done.Execution.State = api.ExecutionStateSucceeded
	// A batch without wanted events makes no rows and no wake-up.
	commit(t, s, &store.Batch{Executions: []store.Execution{running, execution(71, 70, api.ExecutionStateRunning, "")},
		Events: append(deltas(x, 1, 1), deltas(y, 1, 1)...)})
	if n, err := s.PendingNotifications(); n != 0 || err != nil || p.committed.Load() != 0 {
		t.Fatalf("rows without a wanted event: %d (%v), %d wake-ups", n, err, p.committed.Load())
	}
	// x: text.done at 2 (the stored record is running) and run.completed at 3 with the record
	// of the same batch (succeeded); y: text.done at 2.
	commit(t, s, &store.Batch{Events: []store.StoredEvent{event(x, 2, api.StandardEventTypeOutputTextDone), event(y, 2, api.StandardEventTypeOutputTextDone)}})
	commit(t, s, &store.Batch{Executions: []store.Execution{done}, Events: []store.StoredEvent{event(x, 3, api.StandardEventTypeRunCompleted)}})
	if n, err := s.PendingNotifications(); n != 6 || err != nil {
		t.Fatalf("pending rows: %d (%v), want 6", n, err)
	}
	if got := p.committed.Load(); got != 2 {
		t.Fatalf("%d wake-ups, want 2 (one per commit that wrote rows)", got)
	}

	now := time.Now()
	never := func(string) bool { return false }
	due, nextDue, oldest, err := s.OutboxHeads(now, never, 10)
	if err != nil {
		t.Fatal(err)
	}
	// Four lanes, each headed by its sequence 2.
	if len(due) != 4 || !nextDue.IsZero() || oldest.IsZero() || oldest.After(now) {
		t.Fatalf("heads: %d due, nextDue %v, oldest %v; want 4, zero, set", len(due), nextDue, oldest)
	}
	lanes := map[string]store.Notification{}
	for _, n := range due {
		if n.Sequence != 2 {
			t.Fatalf("head of lane %x is sequence %d, want 2", n.Lane(), n.Sequence)
		}
		lanes[n.Lane()] = n
	}
	if len(lanes) != 4 {
		t.Fatalf("heads of %d distinct lanes, want 4", len(lanes))
	}
	head := lanes[lane(x, 'a')]
	if string(head.Body) != `{"state":"running","sequence":2}` || head.URL != "https://hooks.example/a" {
		t.Fatalf("row of x:2 for a: %+v (%s)", head, head.Body)
	}
	// busy lanes and the limit.
	busy := func(lane string) bool { return lane == head.Lane() }
	if due, _, _, _ := s.OutboxHeads(now, busy, 10); len(due) != 3 {
		t.Fatalf("with one lane busy: %d heads, want 3", len(due))
	}
	if due, _, _, _ := s.OutboxHeads(now, never, 2); len(due) != 2 {
		t.Fatalf("limit 2: %d heads", len(due))
	}

	// Retry: the head stays, not due until its next attempt.
	later := now.Add(time.Hour).UTC().Truncate(time.Millisecond)
	retry := head
	retry.Attempts, retry.NextAttempt, retry.LastError = 1, later, "503"
	commit(t, s, &store.Batch{OutboxResults: []store.OutboxResult{{Notification: retry, Outcome: store.OutboxRetry}}})
	due, nextDue, _, _ = s.OutboxHeads(now, never, 10)
	if len(due) != 3 || !nextDue.Equal(later) {
		t.Fatalf("after a retry: %d due (want 3), nextDue %v (want %v)", len(due), nextDue, later)
	}
	due, _, _, _ = s.OutboxHeads(later, never, 10)
	var again store.Notification
	for _, n := range due {
		if n.Lane() == head.Lane() {
			again = n
		}
	}
	if again.Attempts != 1 || again.LastError != "503" || again.Sequence != 2 {
		t.Fatalf("the retried row: %+v", again)
	}
	// Delivered: the lane's next row (x:3, which saw the succeeded record) becomes its head.
	commit(t, s, &store.Batch{OutboxResults: []store.OutboxResult{{Notification: again, Outcome: store.OutboxDelivered}}})
	due, _, _, _ = s.OutboxHeads(later, never, 10)
	var next store.Notification
	for _, n := range due {
		if n.Lane() == head.Lane() {
			next = n
		}
	}
	if next.Sequence != 3 || string(next.Body) != `{"state":"succeeded","sequence":3}` {
		t.Fatalf("after delivery, the lane's head: %+v (%s); want x:3 seeing the batch's own record", next, next.Body)
	}
	// Failed: kept for inspection, out of the pending rows.
	failedAt := later
	next.FailedAt, next.LastError = &failedAt, "gave up"
	commit(t, s, &store.Batch{OutboxResults: []store.OutboxResult{{Notification: next, Outcome: store.OutboxFailed}}})
	failed, err := s.FailedNotifications(x)
	if err != nil || len(failed) != 1 || failed[0].Sequence != 3 || failed[0].LastError != "gave up" || failed[0].FailedAt == nil {
		t.Fatalf("failed rows of x: %+v, %v", failed, err)
	}
	if got, _ := s.FailedNotifications(y); len(got) != 0 {
		t.Fatalf("failed rows of y: %+v", got)
	}
	if n, _ := s.PendingNotifications(); n != 4 {
		t.Fatalf("pending after one delivered and one failed: %d, want 4", n)
	}
	// Retention deletes x's rows, pending and failed; a result for a deleted row is ignored.
	commit(t, s, &store.Batch{Deletions: []store.Execution{done}})
	if got, _ := s.FailedNotifications(x); len(got) != 0 {
		t.Fatalf("failed rows of a deleted execution: %d", len(got))
	}
	if n, _ := s.PendingNotifications(); n != 2 {
		t.Fatalf("pending after x was deleted: %d, want y's 2", n)
	}
	stale := lanes[lane(x, 'b')]
	commit(t, s, &store.Batch{OutboxResults: []store.OutboxResult{{Notification: stale, Outcome: store.OutboxRetry}}})
	if n, _ := s.PendingNotifications(); n != 2 {
		t.Fatalf("a result for a deleted row brought it back: %d pending", n)
	}
	if due, _, _, _ := s.OutboxHeads(later, never, 10); len(due) != 2 {
		t.Fatalf("heads after x was deleted: %d, want y's 2", len(due))
	}
}
