package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"

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

// When the database cannot be reached, a failed group's requests are not each retried alone
// (the Committer's rule for a batch the database refused): they fail with the outage at once,
// instead of thousands of queued writes each waiting for a connection attempt of their own.
func TestUnreachableDatabaseFailsQueueAtOnce(t *testing.T) {
	cluster := pgtest.StartCluster(t, pgtest.Options{})
	s, err := postgres.Open(context.Background(), postgres.Config{DSN: cluster.NewDatabase(t), Node: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := cluster.Stop(); err != nil {
		t.Fatal(err)
	}
	const requests = 200
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
	notRetried := 0
	for range requests {
		err := <-errs
		if err == nil {
			t.Fatal("a write succeeded with the database stopped")
		}
		if strings.Contains(err.Error(), "not retried") {
			notRetried++
		}
	}
	if notRetried == 0 {
		t.Fatal("every queued request tried the unreachable database on its own")
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
