package main

import (
	"context"
	"strconv"
	"strings"
)

// The server's Go allocations over a phase, from the Go collector's counters on the admin
// endpoint's /metrics (go_memstats_mallocs_total: objects allocated, go_memstats_alloc_bytes_total:
// bytes allocated, both cumulative). Divided by the executions completed they are the allocation
// figures of issue 27, measured through the real binary rather than in a benchmark.

type allocCounters struct{ objects, bytes float64 }

func (l *load) allocCounters(ctx context.Context) (allocCounters, bool) {
	if l.cfg.adminURL == "" {
		return allocCounters{}, false
	}
	body, err := l.get(ctx, l.cfg.adminURL+"/metrics")
	if err != nil {
		return allocCounters{}, false
	}
	return parseAllocCounters(string(body))
}

func parseAllocCounters(text string) (c allocCounters, ok bool) {
	var seen int
	for line := range strings.SplitSeq(text, "\n") {
		name, value, found := strings.Cut(line, " ")
		if !found {
			continue
		}
		var dst *float64
		switch name {
		case "go_memstats_mallocs_total":
			dst = &c.objects
		case "go_memstats_alloc_bytes_total":
			dst = &c.bytes
		default:
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return c, false
		}
		*dst = v
		seen++
	}
	return c, seen == 2
}
