package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/postgres"
	"github.com/harness-edge/harness-edge/internal/pgtest"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// BenchmarkLiveEvents is the store's part of the live phase (docs/performance.md): 64
// executions each append an event, with its stream-log scope, and wait for its commit before
// the next, as a running execution's deltas go; the commit linger 2 ms, on a server with fsync
// on. So groups gather what concurrent writers bring (tens of events, not the thousands
// BenchmarkAppendEvents queues at once), and allocs/op is the node's allocations per live
// event: the store's and pgx's, plus the benchmark's own Request, Batch and callback (4).
// `go test -run '^$' -bench LiveEvents -benchmem ./backend/store/postgres/`
func BenchmarkLiveEvents(b *testing.B) {
	const executions = 64
	cluster := pgtest.StartCluster(b, pgtest.Options{Durable: true})
	var commits atomic.Int64
	s, err := postgres.Open(context.Background(), postgres.Config{
		DSN: cluster.NewDatabase(b), Node: "bench", CommitLinger: 2 * time.Millisecond,
		Observe: func(time.Duration) { commits.Add(1) },
	})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ids := make([]string, executions)
	var setup store.Batch
	for i := range ids {
		rec := execution(i+1, api.ExecutionStateRunning, "bench")
		ids[i] = rec.Execution.ID
		setup.Executions = append(setup.Executions, rec)
	}
	commit(b, s, &setup)
	scope := &store.StreamScope{Tenant: "tenant-a", ConversationID: conversationID(1), ProviderID: "mock"}
	before := commits.Load()
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for w, id := range ids {
		n := b.N / executions
		if w < b.N%executions {
			n++
		}
		wg.Go(func() {
			chain := &store.Chain{}
			done := make(chan error, 1)
			for seq := int64(1); seq <= int64(n); seq++ {
				// ~150 bytes of wire JSON, a typical text delta.
				payload := fmt.Appendf(nil, `{"data":{"delta":"the quick brown fox jumps over the lazy dog"},"executionId":%q,"sequence":%d,"type":"output.text.delta"}`, id, seq)
				req := &store.Request{Chain: chain, Batch: &store.Batch{Events: []store.StoredEvent{{ExecutionID: id, Scope: scope,
					Event: store.Event{Sequence: seq, Type: api.StandardEventTypeOutputTextDelta, JSON: payload}}}},
					Done: func(err error) { done <- err }}
				if err := s.Submit(req); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
				if err := <-done; err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if p := failed.Load(); p != nil {
		b.Fatal(*p)
	}
	b.ReportMetric(float64(b.N)/float64(max(1, commits.Load()-before)), "events/commit")
}
