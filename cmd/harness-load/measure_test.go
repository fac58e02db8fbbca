package main

import (
	"context"
	"math"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// procCPU reads this very process's /proc/<pid>/stat: after burning CPU, its figure grows by
// about what getrusage says the process used.
func TestProcCPUReadsUtimeAndStime(t *testing.T) {
	before, ok := procCPU(os.Getpid())
	if !ok {
		t.Fatalf("procCPU(%d): not readable", os.Getpid())
	}
	self0 := selfCPU()
	x := 0
	for start := time.Now(); time.Since(start) < 300*time.Millisecond; {
		x++
	}
	_ = x
	after, _ := procCPU(os.Getpid())
	used, self := after-before, selfCPU()-self0
	// /proc counts in 10 ms ticks; getrusage is exact. They measure the same thing.
	if used <= 0 || math.Abs(float64(used-self)) > float64(50*time.Millisecond) {
		t.Fatalf("procCPU grew by %v, getrusage by %v", used, self)
	}
	r0, w0, ok := procSyscalls(os.Getpid())
	if !ok {
		t.Fatal("procSyscalls: /proc/self/io not readable")
	}
	if err := os.WriteFile(t.TempDir()+"/x", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r1, w1, _ := procSyscalls(os.Getpid()); w1 <= w0 || r1 <= r0 {
		t.Fatalf("syscalls did not grow: reads %d → %d, writes %d → %d", r0, r1, w0, w1)
	}
	if _, ok := procCPU(0); ok {
		t.Fatal("procCPU(0) claims a figure")
	}
}

func TestCommitHistogramQuantilesAndDelta(t *testing.T) {
	text := `# TYPE harness_store_commit_duration_seconds histogram
harness_store_commit_duration_seconds_bucket{le="0.001"} 10
harness_store_commit_duration_seconds_bucket{le="0.01"} 95
harness_store_commit_duration_seconds_bucket{le="0.1"} 100
harness_store_commit_duration_seconds_bucket{le="+Inf"} 100
harness_store_commit_duration_seconds_sum 0.5
other_bucket{le="1"} 7
`
	later := strings.NewReplacer(`"0.001"} 10`, `"0.001"} 110`, `"0.01"} 95`, `"0.01"} 195`, `"0.1"} 100`, `"0.1"} 300`, `"+Inf"} 100`, `"+Inf"} 300`).Replace(text)
	h0, h1 := parseHistogram(text, commitMetric), parseHistogram(later, commitMetric)
	if h0.total() != 100 || h0.upperBound(0.5) != 10 || h0.upperBound(0.99) != 100 {
		t.Fatalf("first reading: total %v, p50 ≤ %v ms, p99 ≤ %v ms", h0.total(), h0.upperBound(0.5), h0.upperBound(0.99))
	}
	d := h1.since(h0) // 100 ≤ 1 ms, 0 more ≤ 10 ms, 100 more ≤ 100 ms
	if d.total() != 200 || d.upperBound(0.5) != 1 || d.upperBound(0.99) != 100 {
		t.Fatalf("delta: total %v, p50 ≤ %v ms, p99 ≤ %v ms", d.total(), d.upperBound(0.5), d.upperBound(0.99))
	}
	if !math.IsNaN(histogram{}.upperBound(0.5)) || finiteMs(math.Inf(1)) != -1 {
		t.Fatal("an empty histogram or an infinite bound must not pass for a figure")
	}
}

// spreadSources dials from several loopback source addresses once n exceeds what one address's
// ephemeral ports allow, and from the default address below that.
func TestSpreadSourcesUsesSeveralLoopbackAddresses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	sources := func(n int) map[string]bool {
		dial := spreadSources(n)
		seen := map[string]bool{}
		for range 6 {
			c, err := dial(context.Background(), "tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			seen[c.LocalAddr().(*net.TCPAddr).IP.String()] = true
			c.Close()
		}
		return seen
	}
	if got := sources(100); len(got) != 1 || !got["127.0.0.1"] {
		t.Fatalf("100 streams dialled from %v, want 127.0.0.1 alone", got)
	}
	if got := sources(100_000); len(got) != 5 {
		t.Fatalf("100,000 streams dialled from %v, want 5 loopback addresses", got)
	}
}

func TestParseAllocCountersReadsTheGoCollectorsCounters(t *testing.T) {
	text := "# HELP go_memstats_mallocs_total Total number of heap objects allocated.\n" +
		"# TYPE go_memstats_mallocs_total counter\ngo_memstats_mallocs_total 109016\n" +
		"go_memstats_mallocs_total_other 5\ngo_memstats_alloc_bytes_total 1.0266488e+07\n"
	c, ok := parseAllocCounters(text)
	if !ok || c.objects != 109016 || c.bytes != 10266488 {
		t.Fatalf("parseAllocCounters = %+v, %v; want 109016 objects, 10266488 bytes", c, ok)
	}
	if _, ok := parseAllocCounters("go_memstats_mallocs_total 1\n"); ok {
		t.Fatal("one counter missing: want ok = false")
	}
}
