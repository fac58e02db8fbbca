package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/postgres"
	"github.com/harness-edge/harness-edge/backend/store/storetest"
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

// BenchmarkCrossNodeWake measures how long a commit on one node takes to wake a watcher on
// another: from the writer's Commit call to the other node's Notice (the commit, its fsync, and
// NOTIFY's delivery), one event at a time, on a server with fsync on. p50/p99 in ms.
func BenchmarkCrossNodeWake(b *testing.B) {
	dsn := pgtest.StartCluster(b, pgtest.Options{Durable: true}).NewDatabase(b)
	owner, other := open(b, dsn, "owner"), open(b, dsn, "other")
	id := executionID(1)
	commit(b, owner, &store.Batch{Executions: []store.Execution{execution(1, api.ExecutionStateRunning, "owner")}})
	woken := make(chan int64, 16)
	stop := other.Watch(func(n store.Notice) {
		if n.ExecutionID == id {
			woken <- n.Sequence
		}
	})
	defer stop()
	lags := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for seq := int64(1); seq <= int64(b.N); seq++ {
		start := time.Now()
		commit(b, owner, &store.Batch{Events: []store.StoredEvent{event(id, seq, api.StandardEventTypeOutputTextDelta)}})
		for got := <-woken; got != seq; got = <-woken {
		}
		lags = append(lags, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lags)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(lags[len(lags)/2]), "p50-ms")
	b.ReportMetric(ms(lags[len(lags)*99/100]), "p99-ms")
}

// BenchmarkReadEvents: the read path of an execution's log from PostgreSQL, over loopback
// (`go test -run '^$' -bench ReadEvents ./backend/store/postgres/`).
func BenchmarkReadEvents(b *testing.B) {
	cluster := pgtest.StartCluster(b, pgtest.Options{})
	s, err := postgres.Open(context.Background(), postgres.Config{DSN: cluster.NewDatabase(b), Node: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.BenchReadEvents(b, s)
}
