package faults

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// The figures of one fault, as docs/scale-out.md reports them (make faults prints them).
type figures struct {
	fault        string
	starts       int           // start requests sent
	acked        int           // of which acknowledged (202)
	firstRefused time.Duration // injection → first start not acknowledged (-1: none)
	firstFailed  time.Duration // injection → first run.failed in the database (-1: none)
	lastFailed   time.Duration // injection → last run.failed (a takeover's length)
	recovered    time.Duration // heal → end of the last start not acknowledged (0: none after heal)
	failed       map[string]int
	unavailable  int            // 503 answers
	refused      map[string]int // starts not acknowledged, by status ("conn": no answer), sent directly to a node
	refusedViaLB map[string]int // the same, sent through the balancer
	maxLatency   time.Duration
	logLines     map[string]int
	notReady     string // per node: when /readyz first failed after the fault (its status)
	readyAgain   string // per node: when it last failed after the heal
	violations   int
}

// measure computes a fault's figures from what was recorded.
func measure(name string, requests []request, acks []ack, db map[string]*dbExecution, injected, healed time.Time, logLines map[string]int, violations int) figures {
	f := figures{fault: name, starts: len(requests), acked: len(acks), firstRefused: -1, firstFailed: -1, lastFailed: -1,
		failed: map[string]int{}, refused: map[string]int{}, refusedViaLB: map[string]int{}, logLines: logLines, violations: violations}
	for _, r := range requests {
		f.maxLatency = max(f.maxLatency, r.latency)
		if r.status == 202 {
			continue
		}
		if r.status == 503 {
			f.unavailable++
		}
		status := fmt.Sprint(r.status)
		if r.status == 0 {
			status = "conn"
		}
		if r.viaBalancer() {
			f.refusedViaLB[status]++
		} else {
			f.refused[status]++
		}
		end := r.at.Add(r.latency)
		if d := end.Sub(injected); end.After(injected) && (f.firstRefused < 0 || d < f.firstRefused) {
			f.firstRefused = d
		}
		if d := end.Sub(healed); end.After(healed) && d > f.recovered {
			f.recovered = d
		}
	}
	for _, x := range db {
		if len(x.events) == 0 {
			continue
		}
		last := x.events[len(x.events)-1]
		if last.typ != "run.failed" {
			continue
		}
		f.failed[failureKind(last.message)]++
		if d := last.at.Sub(injected); last.at.After(injected) {
			if f.firstFailed < 0 || d < f.firstFailed {
				f.firstFailed = d
			}
			f.lastFailed = max(f.lastFailed, d)
		}
	}
	return f
}

// failureKind names a run.failed briefly: "stopped a", "restarted", "not stored", or the message.
func failureKind(message string) string {
	if m := nodeStopped.FindStringSubmatch(message); m != nil {
		return "stopped " + m[1]
	}
	switch message {
	case restartedMessage:
		return "restarted"
	case notStoredMessage:
		return "not stored"
	}
	return message
}

func seconds(d time.Duration) string {
	if d < 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", d.Seconds())
}

func counts(m map[string]int) string {
	if len(m) == 0 {
		return "0"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// printFigures writes the table of docs/scale-out.md (Markdown).
func printFigures(w io.Writer, sc scale, all []figures) {
	form := "lean"
	if sc.full {
		form = "full"
	}
	fmt.Fprintf(w, "\nFault-injection figures (%s form: lease %s, stall %s, takeover %d; times in seconds)\n\n", form, sc.lease, sc.stall, sc.takeover)
	fmt.Fprintln(w, "| fault | starts (acked) | not acked, direct | not acked, via balancer | 503 | first refused | first run.failed | last run.failed | recovered after heal | /readyz failed | /readyz back after heal | failed | max latency | log lines | violations |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, f := range all {
		fmt.Fprintf(w, "| %s | %d (%d) | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n",
			f.fault, f.starts, f.acked, counts(f.refused), counts(f.refusedViaLB), f.unavailable,
			seconds(f.firstRefused), seconds(f.firstFailed), seconds(f.lastFailed), seconds(f.recovered),
			f.notReady, f.readyAgain, counts(f.failed), seconds(f.maxLatency), counts(f.logLines), f.violations)
	}
	fmt.Fprintln(w)
}

// heldFigures says how the streams held on the cut node ended: how many ended before the heal
// without their terminal event (cut, to resume elsewhere) or with it, and the last of those
// ends, in seconds from the fault.
func heldFigures(held []followed, cutBase string, injected, healed time.Time) string {
	cut, finished, late := 0, 0, 0
	var last time.Duration = -1
	for _, f := range held {
		if len(f.conns) == 0 || f.conns[0].base != cutBase || f.conns[0].ended.IsZero() {
			continue
		}
		first := f.conns[0]
		switch {
		case first.ended.After(healed):
			late++
		case first.terminal:
			finished++
		default:
			cut++
		}
		if !first.terminal || first.ended.After(injected) {
			last = max(last, first.ended.Sub(injected))
		}
	}
	return fmt.Sprintf("%d ended without their terminal event before the heal, %d with it, %d after the heal; the last ended at %s s from the fault (healed at %.1f s)",
		cut, finished, late, seconds(last), healed.Sub(injected).Seconds())
}
