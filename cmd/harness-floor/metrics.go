package main

import (
	"fmt"
	"net/http"
	"runtime"
)

// serveAllocationMetrics answers the two Prometheus counters of Go's allocations that
// harness-load reads from harness-edge's admin endpoint (/metrics, the Go collector's names and
// meaning: runtime.MemStats.Mallocs and TotalAlloc), so the load tool reports allocations per
// execution for the floor as for the server.
func serveAllocationMetrics(w http.ResponseWriter, _ *http.Request) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, "go_memstats_mallocs_total %d\n", m.Mallocs)
	fmt.Fprintf(w, "go_memstats_alloc_bytes_total %d\n", m.TotalAlloc)
}
