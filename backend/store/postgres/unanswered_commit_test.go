package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/postgres"
	"github.com/harness-edge/harness-edge/internal/pgtest"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// A start whose COMMIT reached a stalled server and went unanswered past the start's deadline
// may have been applied, so the store may not answer it "not applied": it tries again once the
// server answers. Each retry must be bounded by the store's timeout, not by the start's
// deadline, which has passed: bounded by it, every retry failed at once, the commit goroutine
// retried the start for ever, and every later commit of the node waited behind it (the fault
// suite's database-stall scenarios hung that way).
func TestStartWhoseCommitWentUnansweredIsAnsweredAfterTheStall(t *testing.T) {
	pg := pgtest.StartCluster(t, pgtest.Options{})
	s, err := postgres.Open(context.Background(), postgres.Config{DSN: pg.NewDatabase(t), Node: "a", Timeout: 2 * time.Second,
		LogError: func(err error) { t.Logf("store: %v", err) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })

	var stallOnce sync.Once
	resumed := make(chan struct{})
	s.BeforeCommit(func() {
		stallOnce.Do(func() {
			if err := pg.Pause(); err != nil {
				t.Errorf("pause PostgreSQL: %v", err)
			}
			time.AfterFunc(1500*time.Millisecond, func() {
				if err := pg.Resume(); err != nil {
					t.Errorf("resume PostgreSQL: %v", err)
				}
				close(resumed)
			})
		})
	})

	answers := make(chan error, 2)
	start := &store.Request{
		Batch: &store.Batch{
			Executions: []store.Execution{execution(1, api.ExecutionStateQueued, "a")},
			Events:     []store.StoredEvent{event(executionID(1), 1, api.StandardEventTypeRunQueued)},
		},
		Deadline: time.Now().Add(500 * time.Millisecond), // passes while the server is stopped
		Done:     func(err error) { answers <- err },
	}
	if err := s.Submit(start); err != nil {
		t.Fatal(err)
	}
	later := &store.Request{ // an execution's write, queued behind the start
		Batch: &store.Batch{Events: []store.StoredEvent{event(executionID(2), 1, api.StandardEventTypeRunQueued)}},
		Done:  func(err error) { answers <- err },
	}
	time.Sleep(100 * time.Millisecond)
	if err := s.Submit(later); err != nil {
		t.Fatal(err)
	}

	for i, what := range []string{"the start", "the write queued behind it"} {
		select {
		case err := <-answers:
			if err != nil {
				t.Fatalf("answer %d (%s first): %v; want both applied once the server answers", i, what, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s was not answered 30s after the stall began (the commit goroutine is retrying for ever)", what)
		}
	}
	<-resumed
	for _, id := range []string{executionID(1), executionID(2)} {
		if events, err := s.Events(id, 0, 0); err != nil || len(events) != 1 {
			t.Fatalf("%s has %d events (%v); want its one event, once", id, len(events), err)
		}
	}
}

// The store's sessions run without JIT compilation (it made the stream log's read of a few rows
// take up to 1.6 s once the events table was large); a DSN that sets jit keeps its own.
func TestSessionsRunWithoutJIT(t *testing.T) {
	dsn := newDatabase(t)
	for _, tc := range []struct{ dsn, want string }{{dsn, "off"}, {dsn + "&jit=on", "on"}} {
		s, err := postgres.Open(context.Background(), postgres.Config{DSN: tc.dsn, Node: "a"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Setting(context.Background(), "jit")
		s.Close()
		if err != nil || got != tc.want {
			t.Fatalf("%s: jit is %q (%v); want %q", tc.dsn, got, err, tc.want)
		}
	}
}
