package seed

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// GrowthSizes are the store sizes of the growth benchmarks: HARNESS_GROWTH_SIZES (comma
// separated), else def.
func GrowthSizes(def ...int) []int {
	env := os.Getenv("HARNESS_GROWTH_SIZES")
	if env == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(env, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// BenchStarts measures what the store spends on one execution as the runtime writes a short
// one: a commit of its record, idempotency record and run.queued, then one of its end state
// and its other six events; 32 clients at once (group commits), each in a conversation of its
// own. Run it on a store Write seeded, once per size, to see the cost as the store grows.
func BenchStarts(b *testing.B, s store.Store) {
	b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	cpu0 := processCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		conv := newID("conv_", time.Now())
		for pb.Next() {
			at := time.Now()
			id := newID("exec_", at)
			key := newID("idem_", time.Time{})
			rec := record(id, conv, key, api.ExecutionStateQueued, at)
			events := Events(id, at)
			if err := s.Commit(&store.Batch{Executions: []store.Execution{rec}, Events: events[:1],
				Idempotency: []store.Idempotency{{ConversationID: conv, Key: key, Fingerprint: "f", ExecutionID: id}}}); err != nil {
				b.Error(err)
				return
			}
			rec.Execution.State = api.ExecutionStateSucceeded
			if err := s.Commit(&store.Batch{Executions: []store.Execution{rec}, Events: events[1:]}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	// The process's CPU (user and system) per start: unlike ns/op, which is mostly waiting for
	// the disk's syncs, it is what the store spends.
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
	// The listing's first page, after the starts: every client's conversation is new.
	t0 := time.Now()
	const pages = 200
	for range pages {
		if _, _, err := s.ListExecutions(store.ListQuery{Limit: 20}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(t0).Microseconds())/pages, "list-µs")
}

// processCPU is the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
