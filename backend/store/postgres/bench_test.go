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

// BenchmarkAppendEvents measures durable event appends per second with 1, 8 and 64 executions
// appending at once, each event its own Request (as the runtime submits them), on a server of
// its own with fsync on: the figure is durable appends. events/commit is how many share one
// transaction (group commit).
func BenchmarkAppendEvents(b *testing.B) {
	cluster := pgtest.StartCluster(b, pgtest.Options{Durable: true})
	for _, executions := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("executions=%d", executions), func(b *testing.B) {
			var commits atomic.Int64
			s, err := postgres.Open(context.Background(), postgres.Config{
				DSN: cluster.NewDatabase(b), Node: "bench",
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
			// ~150 bytes of wire JSON per event, a typical text delta.
			payload := []byte(`{"data":{"delta":"the quick brown fox jumps over the lazy dog, again and again"},"executionId":"` + ids[0] + `","id":"x","sequence":1,"type":"output.text.delta"}`)
			before := commits.Load()
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
					var done sync.WaitGroup
					done.Add(n)
					for seq := int64(1); seq <= int64(n); seq++ {
						req := &store.Request{Chain: chain, Batch: &store.Batch{Events: []store.StoredEvent{{ExecutionID: id,
							Event: store.Event{Sequence: seq, Type: api.StandardEventTypeOutputTextDelta, JSON: payload}}}},
							Done: func(err error) {
								if err != nil {
									failed.CompareAndSwap(nil, &err)
								}
								done.Done()
							}}
						if err := s.Submit(req); err != nil {
							failed.CompareAndSwap(nil, &err)
							done.Done()
						}
					}
					done.Wait()
				})
			}
			wg.Wait()
			b.StopTimer()
			if p := failed.Load(); p != nil {
				b.Fatal(*p)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(b.N)/float64(max(1, commits.Load()-before)), "events/commit")
		})
	}
}
