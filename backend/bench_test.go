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
	"github.com/harness-edge/harness-edge/sdk/api"
)

// tokenEmitter emits one text delta per token it receives, from as many concurrent executions as
// the benchmark starts; appended counts the durable appends.
type tokenEmitter struct {
	tokens   chan struct{}
	appended sync.WaitGroup
}

func (p *tokenEmitter) Manifest() api.ProviderManifest {
	return (&scripted{id: "tokens"}).Manifest()
}

func (p *tokenEmitter) Run(ctx context.Context, run *backend.Run) (backend.Result, error) {
	for {
		select {
		case _, ok := <-p.tokens:
			if !ok {
				return backend.Result{}, nil
			}
			err := run.EmitText("benchmark delta")
			p.appended.Done()
			if err != nil {
				return backend.Result{}, err
			}
		case <-ctx.Done():
			return backend.Result{}, ctx.Err()
		}
	}
}

// commitCounter counts physical store commits, to report how many appends share one, and
// durable events (EventsAppended is called once events are committed and published).
type commitCounter struct {
	commits atomic.Int64
	events  atomic.Int64
}

func (*commitCounter) ExecutionStarted(string)                      {}
func (*commitCounter) ExecutionFinished(string, api.ExecutionState) {}
func (c *commitCounter) EventsAppended(n int)                       { c.events.Add(int64(n)) }
func (c *commitCounter) StoreCommit(time.Duration)                  { c.commits.Add(1) }

// waitEvents waits until at least n events were committed and published.
func (c *commitCounter) waitEvents(n int64) {
	for c.events.Load() < n {
		time.Sleep(50 * time.Microsecond)
	}
}

// BenchmarkAppendEvents measures durable event appends per second with 1, 8 and 64 executions
// appending concurrently. Emit returns once the event is queued; the clock stops when every
// event is committed to the bbolt file and published (counted through the Observer), so the
// figure is durable appends. Concurrent and consecutive appends share commits.
func BenchmarkAppendEvents(b *testing.B) {
	for _, executions := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("executions=%d", executions), func(b *testing.B) {
			p := &tokenEmitter{tokens: make(chan struct{})}
			commits := &commitCounter{}
			// One execution takes all b.N events: lift the per-execution event limits, which a
			// large b.N (a fast first round) would otherwise hit, stopping the provider and
			// leaving the benchmark waiting for appends that never come.
			rt := openRuntime(b, "", backend.Options{Providers: []backend.Provider{p}, Observer: commits,
				MaxEventsPerExecution: math.MaxInt32, MaxEventBytesPerExecution: math.MaxInt64})
			conv := newConversation(b, rt)
			ids := make([]string, executions)
			for i := range executions {
				ids[i] = start(b, rt, conv, startOpts{provider: "tokens"}).ID
			}
			commits.waitEvents(int64(2 * executions)) // run.queued and run.started of each
			b.ResetTimer()
			before := commits.commits.Load()
			durable := commits.events.Load()
			p.appended.Add(b.N)
			for range b.N {
				p.tokens <- struct{}{}
			}
			p.appended.Wait()
			commits.waitEvents(durable + int64(b.N))
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(b.N)/float64(commits.commits.Load()-before), "events/commit")
			close(p.tokens)
			for _, id := range ids {
				for range backend.FollowExecution(context.Background(), rt, id, 0) {
				}
			}
		})
	}
}

// BenchmarkMockExecutions measures mock executions (delayMs 0, input "hello runtime": 7 events)
// from StartExecution to the terminal event, one at a time and 8 at a time.
func BenchmarkMockExecutions(b *testing.B) {
	for _, concurrency := range []int{1, 8} {
		b.Run(fmt.Sprintf("concurrent=%d", concurrency), func(b *testing.B) {
			rt := openRuntime(b, "", backend.Options{})
			conv := newConversation(b, rt)
			work := make(chan struct{})
			var wg sync.WaitGroup
			var failure sync.Once
			var failed error
			for range concurrency {
				wg.Go(func() {
					for range work {
						exec, _, err := rt.StartExecution(context.Background(), startReq(conv, startOpts{input: "hello runtime", config: api.JSONObject{"delayMs": 0}}))
						if err != nil {
							failure.Do(func() { failed = err })
							continue
						}
						for e, err := range backend.FollowExecution(context.Background(), rt, exec.ID, 0) {
							if err != nil || (e.Terminal() && e.Type != api.StandardEventTypeRunCompleted) {
								failure.Do(func() { failed = fmt.Errorf("execution ended with %s (%v)", e.Type, err) })
							}
						}
					}
				})
			}
			b.ResetTimer()
			for range b.N {
				work <- struct{}{}
			}
			close(work)
			wg.Wait()
			b.StopTimer()
			if failed != nil {
				b.Fatal(failed)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "executions/s")
		})
	}
}
