package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/postgres"
	"github.com/harness-edge/harness-edge/backend/store/storetest"
	"github.com/harness-edge/harness-edge/internal/pgtest"
	"github.com/harness-edge/harness-edge/sdk/api"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// newDatabase is a fresh database on the test binary's shared PostgreSQL.
func newDatabase(t testing.TB) string {
	t.Helper()
	return pgtest.Start(t).NewDatabase(t)
}

// open opens a store on dsn as node, closed when t ends (Close twice is harmless).
func open(t testing.TB, dsn, node string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), postgres.Config{DSN: dsn, Node: node, LogError: func(err error) { t.Logf("store %s: %v", node, err) }})
	if err != nil {
		t.Fatalf("Open %s: %v", node, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// The contract suite, each test on a database of its own.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return open(t, newDatabase(t), "node-a") })
}

// The cluster half of the contract: leases with epochs, fencing, claims, commands.
func TestClusterContract(t *testing.T) {
	storetest.RunCluster(t, func(t *testing.T) storetest.OpenNode {
		dsn := newDatabase(t)
		return func(t *testing.T, node string) store.Cluster { return open(t, dsn, node) }
	})
}

// Keys a client or a provider chooses may hold any character: NUL (provider state keys are
// "provider id, 0x00, key"), non-ASCII, quotes. They round-trip exactly and stay distinct.
func TestKeysWithAnyCharacter(t *testing.T) {
	s := open(t, newDatabase(t), "a")
	keys := []string{"k\x00nul", "k", "ключ \"'\\", "k\x00"}
	var b store.Batch
	for i, k := range keys {
		b.Idempotency = append(b.Idempotency, store.Idempotency{ConversationID: conversationID(1), Key: k, Fingerprint: k, ExecutionID: executionID(i + 1)})
		b.ProviderState = append(b.ProviderState, store.ProviderState{Key: "mock\x00" + k, Value: []byte(k)})
	}
	commit(t, s, &b)
	for i, k := range keys {
		rec, found, err := s.Idempotency("", conversationID(1), k)
		if err != nil || !found || rec.Key != k || rec.ExecutionID != executionID(i+1) {
			t.Errorf("Idempotency(%q) = %+v, %v, %v", k, rec, found, err)
		}
		v, found, err := s.ProviderState("mock\x00" + k)
		if err != nil || !found || string(v) != k {
			t.Errorf("ProviderState(%q) = %q, %v, %v", k, v, found, err)
		}
	}
}

// When the database cannot be reached, writes wait for it instead of failing (a stalled or
// restarting database pauses executions, it does not fail them), except a request with a
// deadline (a start), which fails with ErrUnavailable once it passed; Close ends the waiting.
func TestUnreachableDatabasePausesWrites(t *testing.T) {
	cluster := pgtest.StartCluster(t, pgtest.Options{})
	s, err := postgres.Open(context.Background(), postgres.Config{DSN: cluster.NewDatabase(t), Node: "a", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := cluster.Stop(); err != nil {
		t.Fatal(err)
	}
	const requests = 50
	errs := make(chan error, requests)
	for i := range requests {
		req := &store.Request{
			Batch: &store.Batch{Events: []store.StoredEvent{event(executionID(i+1), 1, api.StandardEventTypeRunQueued)}},
			Done:  func(err error) { errs <- err },
		}
		if err := s.Submit(req); err != nil {
			t.Fatal(err)
		}
	}
	start := make(chan error, 1)
	if err := s.Submit(&store.Request{
		Batch:    &store.Batch{Events: []store.StoredEvent{event(executionID(requests+1), 1, api.StandardEventTypeRunQueued)}},
		Deadline: time.Now().Add(300 * time.Millisecond),
		Done:     func(err error) { start <- err },
	}); err != nil {
		t.Fatal(err)
	}
	if err := <-start; !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("the request with a deadline: %v, want ErrUnavailable", err)
	}
	select {
	case err := <-errs:
		t.Fatalf("a write without a deadline ended while the database was down: %v", err)
	default:
	}
	if _, _, err := s.Execution(executionID(1)); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("a read with the database down: %v, want ErrUnavailable", err)
	}
	// A command to another node (a cancel or an answer for the execution's owner) too: the
	// caller is answered 503 and retries, not 500 (the nemesis's seed 3043039726662538 got
	// INTERNAL_ERROR "post command: conn closed" from a cancel during a PostgreSQL crash).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.PostCommand(ctx, store.Command{Node: "b", Kind: "cancel", ExecutionID: executionID(1)}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("a command posted with the database down: %v, want ErrUnavailable", err)
	}
	s.Close()
	for range requests {
		if err := <-errs; err == nil {
			t.Fatal("a write succeeded with the database stopped")
		}
	}
}

// Large groups send their events with COPY: a duplicate (execution, sequence) among them fails
// only the batch that holds it, whatever the path; nothing of a failed batch is applied.
func TestLargeGroupDuplicateFailsOnlyItsBatch(t *testing.T) {
	s := open(t, newDatabase(t), "a")
	id := executionID(1)
	var big store.Batch
	for seq := int64(1); seq <= 300; seq++ {
		big.Events = append(big.Events, event(id, seq, api.StandardEventTypeOutputTextDelta))
	}
	commit(t, s, &big) // one batch of 300 events: the COPY path
	overlap := &store.Batch{Events: append([]store.StoredEvent{event(id, 301, api.StandardEventTypeOutputTextDelta)}, big.Events[299:]...)}
	for seq := int64(302); seq <= 600; seq++ {
		overlap.Events = append(overlap.Events, event(id, seq, api.StandardEventTypeOutputTextDelta))
	}
	if err := s.Commit(overlap); err == nil {
		t.Fatal("a batch repeating sequence 300 committed")
	}
	if last, err := s.LastSequence(id); err != nil || last != 300 {
		t.Fatalf("LastSequence = %d, %v; the failed batch left rows behind", last, err)
	}
	// Many one-event requests, one of them a duplicate: only it fails.
	const requests = 1000
	errs := make([]error, requests)
	var done sync.WaitGroup
	done.Add(requests)
	for i := range requests {
		seq := int64(301 + i)
		if i == 500 {
			seq = 42 // taken
		}
		req := &store.Request{Batch: &store.Batch{Events: []store.StoredEvent{event(executionID(2+i%7), seq, api.StandardEventTypeOutputTextDelta)}},
			Done: func(err error) { errs[i] = err; done.Done() }}
		if i == 500 {
			req.Batch.Events[0].ExecutionID, req.Batch.Events[0].Event = id, event(id, 42, api.StandardEventTypeOutputTextDelta).Event
		}
		if err := s.Submit(req); err != nil {
			t.Fatal(err)
		}
	}
	done.Wait()
	for i, err := range errs {
		if (err != nil) != (i == 500) {
			t.Fatalf("request %d: %v (only the duplicate, 500, may fail)", i, err)
		}
	}
}

// A commit retried after a transient failure may already have been applied (the connection was
// lost during COMMIT): applied again it meets only its own rows, and succeeds without writing
// anything twice; an idempotency key another execution holds still fails it with ErrConflict,
// and nothing of it is applied.
func TestRetriedCommitToleratesItsOwnRows(t *testing.T) {
	s := open(t, newDatabase(t), "a")
	key := "k"
	batch := func(exec string) *store.Batch {
		return &store.Batch{
			Events:      []store.StoredEvent{event(exec, 1, api.StandardEventTypeRunQueued)},
			Idempotency: []store.Idempotency{{Tenant: "", ConversationID: "conv_1", Key: key, ExecutionID: exec, Fingerprint: "f"}},
		}
	}
	submit := func(b *store.Batch, attempts int) error {
		done := make(chan error, 1)
		if err := s.Submit(&store.Request{Batch: b, Attempts: attempts, Done: func(err error) { done <- err }}); err != nil {
			t.Fatal(err)
		}
		return <-done
	}
	if err := submit(batch(executionID(1)), 0); err != nil {
		t.Fatal(err)
	}
	if err := submit(batch(executionID(1)), 1); err != nil {
		t.Fatalf("the same commit again, as a retry: %v, want its own rows tolerated", err)
	}
	if events, err := s.Events(executionID(1), 0, 0); err != nil || len(events) != 1 {
		t.Fatalf("after the retry: %d events, %v; want the one, once", len(events), err)
	}
	// The stream log too: the event once, at position 1.
	if page, err := s.ReadLog(store.LogQuery{AnyTenant: true}); err != nil || len(page.Entries) != 1 || page.Entries[0].Position != 1 {
		t.Fatalf("the stream log after the retry: %+v, %v; want the event once", page, err)
	}
	if err := submit(batch(executionID(2)), 1); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a retried commit whose key another execution holds: %v, want ErrConflict", err)
	}
	if events, err := s.Events(executionID(2), 0, 0); err != nil || len(events) != 0 {
		t.Fatalf("the refused commit left %d events (%v)", len(events), err)
	}
	if err := submit(batch(executionID(1)), 0); !errors.Is(err, store.ErrFenced) && !errors.Is(err, store.ErrConflict) {
		t.Fatalf("the same commit again, not a retry: %v, want it refused", err)
	}
}
