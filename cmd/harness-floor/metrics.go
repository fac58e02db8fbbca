package main

import (
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"
)

// serveMetrics answers what harness-load reads from harness-edge's admin endpoint (/metrics), in
// the same names and meaning: the two Prometheus counters of Go's allocations (the Go
// collector's names: runtime.MemStats.Mallocs and TotalAlloc) and the histogram of store commits
// (harness_store_commit_duration_seconds), so the load tool reports allocations, commits and
// fsyncs per execution for the floor as for the server.
func serveMetrics(w http.ResponseWriter, store *floorStore) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, "go_memstats_mallocs_total %d\n", m.Mallocs)
	fmt.Fprintf(w, "go_memstats_alloc_bytes_total %d\n", m.TotalAlloc)
	store.commits.write(w, "harness_store_commit_duration_seconds")
}

// commitBounds are the histogram's upper bounds in seconds: harness-edge's (0.1 ms × 2.5^i).
var commitBounds = func() []float64 {
	b := make([]float64, 12)
	for i, v := 0, 0.0001; i < len(b); i, v = i+1, v*2.5 {
		b[i] = v
	}
	return b
}()

// commitHistogram counts commits by duration, cumulatively as Prometheus does.
type commitHistogram struct {
	buckets [13]atomic.Int64 // one per bound, then +Inf
}

func (h *commitHistogram) observe(d time.Duration) {
	s := d.Seconds()
	for i, bound := range commitBounds {
		if s <= bound {
			h.buckets[i].Add(1)
		}
	}
	h.buckets[len(commitBounds)].Add(1)
}

func (h *commitHistogram) write(w http.ResponseWriter, name string) {
	for i, bound := range commitBounds {
		fmt.Fprintf(w, "%s_bucket{le=%q} %d\n", name, strconv.FormatFloat(bound, 'g', -1, 64), h.buckets[i].Load())
	}
	n := h.buckets[len(commitBounds)].Load()
	fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n%s_count %d\n", name, n, name, n)
}
