package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The server's store commits during a phase, from the histogram harness_store_commit_duration_seconds
// on Caddy's admin /metrics: how many commits the phase cost (per execution in e2e) and how long
// they took. Every event reaches subscribers only once its commit is durable, so a commit's
// duration is part of every live event's lag: the fan-out phases report both side by side.

const commitMetric = "harness_store_commit_duration_seconds"

// histogram is a cumulative Prometheus histogram: counts[i] observations ≤ bounds[i] seconds;
// the last bound is +Inf.
type histogram struct {
	bounds []float64
	counts []float64
}

// commitHistogram reads the commit histogram, ok false without -admin or when it is missing.
func (l *load) commitHistogram(ctx context.Context) (h histogram, ok bool) {
	if l.cfg.adminURL == "" {
		return h, false
	}
	body, err := l.get(ctx, l.cfg.adminURL+"/metrics")
	if err != nil {
		return h, false
	}
	return parseHistogram(string(body), commitMetric), true
}

// parseHistogram reads the _bucket lines of one histogram from the Prometheus text format.
func parseHistogram(text, name string) histogram {
	var h histogram
	for line := range strings.SplitSeq(text, "\n") {
		rest, ok := strings.CutPrefix(line, name+`_bucket{le="`)
		if !ok {
			continue
		}
		le, value, ok := strings.Cut(rest, `"} `)
		if !ok {
			continue
		}
		bound, err1 := strconv.ParseFloat(le, 64) // "+Inf" parses as +Inf
		count, err2 := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err1 != nil || err2 != nil {
			continue
		}
		h.bounds = append(h.bounds, bound)
		h.counts = append(h.counts, count)
	}
	return h
}

// since is h minus an earlier reading of the same histogram.
func (h histogram) since(earlier histogram) histogram {
	out := histogram{bounds: h.bounds, counts: make([]float64, len(h.counts))}
	for i := range h.counts {
		out.counts[i] = h.counts[i]
		if i < len(earlier.counts) {
			out.counts[i] -= earlier.counts[i]
		}
	}
	return out
}

func (h histogram) total() float64 {
	if len(h.counts) == 0 {
		return 0
	}
	return h.counts[len(h.counts)-1]
}

// upperBound is the bound of the bucket holding quantile q, in ms: the q-quantile is at most this
// (+Inf when it lies in the last bucket, NaN when there are no observations).
func (h histogram) upperBound(q float64) float64 {
	n := h.total()
	if n == 0 {
		return math.NaN()
	}
	for i, c := range h.counts {
		if c >= q*n {
			return h.bounds[i] * 1000
		}
	}
	return math.Inf(1)
}

// finiteMs is v for the JSON summary, which cannot hold +Inf or NaN: -1 stands for "above the
// last finite bucket" or "unknown".
func finiteMs(v float64) float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return -1
	}
	return v
}

// commitNote describes the commits of a phase, or "" when they could not be read.
func commitNote(h histogram) string {
	if h.total() == 0 {
		return ""
	}
	return fmt.Sprintf("%.0f store commits, p50 ≤ %.2f ms, p99 ≤ %.2f ms (bucket bounds of %s)",
		h.total(), h.upperBound(0.5), h.upperBound(0.99), commitMetric)
}
