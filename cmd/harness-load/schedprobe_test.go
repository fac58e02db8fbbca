package main

import (
	"testing"
	"time"
)

// The scheduling probe records how late its sleeps end: at least one sample whenever it ran,
// none negative, and its summary ordered (p50 ≤ p99 ≤ max).
func TestSchedProbe(t *testing.T) {
	stop := startSchedProbe(time.Millisecond)
	s := stop()
	if s.Count < 1 {
		t.Fatalf("no sample: %+v", s)
	}
	if s.P50 < 0 || s.P50 > s.P99 || s.P99 > s.Max {
		t.Fatalf("summary out of order or negative: %+v", s)
	}
}
