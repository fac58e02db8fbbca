package main

import (
	"slices"
	"sync"
	"time"
)

// latencies collects samples from many goroutines. Samples are bounded by the phases' own
// bounds (count and time), so a plain slice is enough.
type latencies struct {
	mu      sync.Mutex
	samples []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.samples = append(l.samples, d)
	l.mu.Unlock()
}

func (l *latencies) addAll(ds []time.Duration) {
	l.mu.Lock()
	l.samples = append(l.samples, ds...)
	l.mu.Unlock()
}

// Summary is the distribution of a latency, in milliseconds.
type Summary struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50Ms"`
	P99   float64 `json:"p99Ms"`
	Max   float64 `json:"maxMs"`
	Mean  float64 `json:"meanMs"`
}

func (l *latencies) summary() Summary {
	l.mu.Lock()
	s := slices.Clone(l.samples)
	l.mu.Unlock()
	return summarize(s)
}

func summarize(s []time.Duration) Summary {
	if len(s) == 0 {
		return Summary{}
	}
	slices.Sort(s)
	var total time.Duration
	for _, d := range s {
		total += d
	}
	return Summary{
		Count: len(s),
		P50:   ms(quantile(s, 0.50)),
		P99:   ms(quantile(s, 0.99)),
		Max:   ms(s[len(s)-1]),
		Mean:  ms(total / time.Duration(len(s))),
	}
}

// quantile of sorted samples, nearest rank.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
