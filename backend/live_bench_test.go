package backend_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
)

// BenchmarkLiveStream measures what one live event costs the runtime (issue 46): 8 or 64
// executions emit text deltas in rounds, each read live by 1 or 4 subscribers of its stream
// (OpenStream, Ready and Read, as the proxy reads it), and an op is one event delivered to every
// subscriber of its execution. With 64 executions a commit carries tens of events, and the
// store's per-commit allocations, which blur the 8-execution figures by about one either way,
// fall to a few per event: that shape shows the runtime's own per-event allocations. Its allocs/op, beside the floor's (cmd/harness-floor's live mode), is the figure
// the live path is tuned by: the runtime's own allocations per event, with the store's (bbolt's
// cursor, spill and page writes, per commit) shared by the events of a commit.
func BenchmarkLiveStream(b *testing.B) {
	for _, shape := range []struct{ executions, subscribers int }{{8, 1}, {8, 4}, {64, 1}} {
		executions, subscribers := shape.executions, shape.subscribers
		b.Run(fmt.Sprintf("executions=%d/subscribers=%d", executions, subscribers), func(b *testing.B) {
			p := &tokenEmitter{tokens: make(chan struct{})}
			commits := &commitCounter{}
			rt := openRuntime(b, "", backend.Options{Providers: []backend.Provider{p}, Observer: commits,
				MaxEventsPerExecution: math.MaxInt32, MaxEventBytesPerExecution: math.MaxInt64})
			conv := newConversation(b, rt)
			var delivered atomic.Int64
			var readers sync.WaitGroup
			for range executions {
				id := start(b, rt, conv, startOpts{provider: "tokens"}).ID
				for range subscribers {
					sub, err := rt.OpenStream(context.Background(), backend.StreamRequest{ExecutionID: id})
					if err != nil {
						b.Fatal(err)
					}
					readers.Go(func() { readLive(sub, &delivered) })
				}
			}
			// run.queued and run.started of each execution, to every subscriber.
			waitAtLeast(&delivered, int64(2*executions*subscribers))
			b.ReportAllocs()
			b.ResetTimer()
			before := commits.commits.Load()
			from := delivered.Load()
			// In rounds of one delta per execution, each delivered before the next round: live
			// deltas come tens of milliseconds apart, so a commit carries a few executions'
			// deltas and a subscriber reads one at a time — unpaced, a commit would carry
			// thousands and every per-commit and per-read cost would vanish from the figure.
			p.appended.Add(b.N)
			for sent := 0; sent < b.N; {
				round := min(executions, b.N-sent)
				for range round {
					p.tokens <- struct{}{}
				}
				sent += round
				waitAtLeast(&delivered, from+int64(sent*subscribers))
			}
			p.appended.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/float64(max(commits.commits.Load()-before, 1)), "events/commit")
			close(p.tokens) // the executions complete; their readers end with the terminal event
			readers.Wait()
		})
	}
}

// readLive drains a live stream to its end as the proxy does: wait on Ready, then Read what is
// there; it counts the events delivered.
func readLive(sub *backend.Stream, delivered *atomic.Int64) {
	defer sub.Close()
	for {
		ready := sub.Ready()
		events, done, err := sub.Read(256)
		if err != nil || done {
			return
		}
		delivered.Add(int64(len(events)))
		if len(events) == 0 {
			<-ready
		}
	}
}

// waitAtLeast waits until the counter reaches n.
func waitAtLeast(counter *atomic.Int64, n int64) {
	for counter.Load() < n {
		time.Sleep(50 * time.Microsecond)
	}
}
