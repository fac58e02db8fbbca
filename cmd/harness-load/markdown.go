package main

import (
	"fmt"
	"strings"
)

// markdown renders the report as a table (one row per phase) followed by the memory series.
func markdown(rep *Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Load average (1, 5, 15 min) when the load tool started: %s; per phase below (before → after).\n\n", rep.Load)
	fmt.Fprintf(&b, "| phase | throughput | p50 | p99 | max | lag p50 / p99 | errors | notes |\n")
	fmt.Fprintf(&b, "| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, p := range rep.Phases {
		lag := "–"
		if p.Lag != nil && p.Lag.Count > 0 {
			lag = fmt.Sprintf("%.2f / %.2f ms", p.Lag.P50, p.Lag.P99)
		}
		p50, p99, mx := "–", "–", "–"
		if p.Latency.Count > 0 {
			p50, p99, mx = fmtMs(p.Latency.P50), fmtMs(p.Latency.P99), fmtMs(p.Latency.Max)
		}
		notes := strings.Join(p.Notes, "; ")
		if p.Name == "replay" && p.Extra != nil {
			notes = fmt.Sprintf("%.0f MB/s; %s", p.Extra["MBPerSecond"], notes)
		}
		if (p.Name == "fanout" || p.Name == "saturation") && p.Extra != nil {
			notes = fmt.Sprintf("execution produced %.0f events/s; %s", p.Extra["producedEventsPerSec"], notes)
		}
		notes += fmt.Sprintf(" (load %s → %s)", p.LoadBefore, p.LoadAfter)
		if p.FirstError != "" {
			notes += fmt.Sprintf(" (first error: %s)", oneLineText(p.FirstError, 160))
		}
		fmt.Fprintf(&b, "| %s | %s %s/s | %s | %s | %s | %s | %d | %s |\n",
			p.Name, fmtNum(p.Throughput), p.Unit, p50, p99, mx, lag, p.Errors, notes)
	}
	for _, p := range rep.Phases {
		if len(p.Series) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\nServer memory, phase %s:\n\n", p.Name)
		fmt.Fprintf(&b, "| point | executions | VmRSS | RssAnon | RssFile (mapped store) | Go heap live after GC | goroutine stacks | goroutines |\n")
		fmt.Fprintf(&b, "| --- | --- | --- | --- | --- | --- | --- | --- |\n")
		for _, s := range p.Series {
			execs := "–"
			if s.Executions > 0 {
				execs = fmt.Sprint(s.Executions)
			}
			fmt.Fprintf(&b, "| %s | %s | %.0f MiB | %.0f MiB | %.0f MiB | %.1f MiB | %.1f MiB | %.0f |\n",
				s.Label, execs, s.VmRSSMiB, s.RssAnonMiB, s.RssFileMiB, s.HeapLiveMiB, s.StackMiB, s.Goroutines)
		}
	}
	return b.String()
}

func fmtMs(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f ms", v)
	}
	return fmt.Sprintf("%.2f ms", v)
}

// fmtNum writes a rate with thousands separators (a thin space, as the rest of the docs do).
func fmtNum(v float64) string {
	if v < 100 {
		return fmt.Sprintf("%.1f", v)
	}
	s := fmt.Sprintf("%.0f", v)
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

func oneLineText(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", "/")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
