package faults

import (
	"fmt"
	"regexp"
	"slices"
	"time"
)

// The invariants checked after each fault. Each is a function of what was observed that
// returns its violations (empty: it holds), so that each is shown able to fail by a unit test
// that feeds it a hand-made violating input (invariants_check_test.go).

// 1. Every acknowledged start exists: a 202 with an id is a promise.
func checkAcknowledged(acks []ack, db map[string]*dbExecution) []string {
	var out []string
	for _, a := range acks {
		if x := db[a.id]; x == nil || x.state == "" {
			out = append(out, fmt.Sprintf("%s (acknowledged by %s via %s) is not in the database", a.id, a.owner, a.via))
		}
	}
	for _, x := range db {
		if x.state == "" {
			out = append(out, fmt.Sprintf("%s has %d events but no execution record", x.id, len(x.events)))
		}
	}
	return out
}

// 2. Exactly one terminal event per execution, last, agreeing with the record's state, and
// sequences 1..n without gap or repeat.
func checkEventLogs(db map[string]*dbExecution) []string {
	var out []string
	for _, x := range db {
		terminals := 0
		for i, ev := range x.events {
			if ev.sequence != int64(i+1) {
				out = append(out, fmt.Sprintf("%s: event %d has sequence %d (want 1..n contiguous)", x.id, i+1, ev.sequence))
				break
			}
		}
		for _, ev := range x.events {
			if isTerminal(ev.typ) {
				terminals++
			}
		}
		switch {
		case terminals != 1:
			out = append(out, fmt.Sprintf("%s: %d terminal events (state %s), want exactly one", x.id, terminals, x.state))
		case !isTerminal(x.events[len(x.events)-1].typ):
			out = append(out, fmt.Sprintf("%s: events follow its terminal event", x.id))
		case stateOf(x.events[len(x.events)-1].typ) != x.state:
			out = append(out, fmt.Sprintf("%s: terminal event %s but state %s", x.id, x.events[len(x.events)-1].typ, x.state))
		}
	}
	return out
}

func stateOf(terminal string) string {
	return map[string]string{"run.completed": "succeeded", "run.failed": "failed", "run.cancelled": "cancelled"}[terminal]
}

var nodeStopped = regexp.MustCompile(`^Node (\S+) stopped before the execution finished$`)

// Failures a node the fault took down may leave on its own executions besides "Node X
// stopped": its restart's recovery, and the writes a store out of reach refused.
const (
	restartedMessage = "Runtime restarted before the execution finished"
	notStoredMessage = "Runtime could not store the execution's changes"
)

// 3. Only the executions of a node the fault took down (killed, frozen, partitioned, cut from
// its database: mayFail) are failed — by a node stop naming it, its restart's recovery or its
// refused writes; no healthy node's execution fails, none fails otherwise, none is cancelled
// (nobody cancels here).
func checkFailures(acks []ack, db map[string]*dbExecution, mayFail []string) []string {
	owner := map[string]string{}
	for _, a := range acks {
		owner[a.id] = a.owner
	}
	// An execution whose start was not acknowledged (the client gave up) has no known owner:
	// any node the fault took down may have run it.
	ownerMayFail := func(id string) bool {
		o, known := owner[id]
		return (!known && len(mayFail) > 0) || slices.Contains(mayFail, o)
	}
	var out []string
	for _, x := range db {
		if len(x.events) == 0 {
			continue
		}
		last := x.events[len(x.events)-1]
		switch last.typ {
		case "run.completed":
		case "run.failed":
			m := nodeStopped.FindStringSubmatch(last.message)
			switch {
			case last.message == restartedMessage || last.message == notStoredMessage:
				if !ownerMayFail(x.id) {
					out = append(out, fmt.Sprintf("%s failed as %q, but its node %s was healthy (the fault took down %v)", x.id, last.message, owner[x.id], mayFail))
				}
			case m == nil:
				out = append(out, fmt.Sprintf("%s failed: %q, not a node stop", x.id, last.message))
			case !slices.Contains(mayFail, m[1]):
				out = append(out, fmt.Sprintf("%s failed as %q, but node %s was healthy (the fault took down %v)", x.id, last.message, m[1], mayFail))
			case owner[x.id] != "" && owner[x.id] != m[1]:
				out = append(out, fmt.Sprintf("%s failed as %q, but node %s acknowledged it", x.id, last.message, owner[x.id]))
			}
		case "run.cancelled":
			out = append(out, fmt.Sprintf("%s was cancelled, and nobody cancelled it", x.id))
		}
	}
	return out
}

// 4. Every endpoint's answer (state and last sequence) equals the database's (after
// agreeing has polled for up to agreeWithin).
func checkAgreement(views []view, db map[string]*dbExecution) []string {
	var out []string
	for _, v := range views {
		if d := disagreement(v, db[v.id]); d != "" {
			out = append(out, d)
		}
	}
	return out
}

func disagreement(v view, x *dbExecution) string {
	switch {
	case v.err != "":
		return fmt.Sprintf("%s at %s: %s", v.id, v.endpoint, v.err)
	case x == nil:
		return fmt.Sprintf("%s at %s: answered %s, the database has no such execution", v.id, v.endpoint, v.state)
	case v.state != x.state || v.lastSequence != x.lastSequence():
		return fmt.Sprintf("%s at %s: %s to #%d, the database %s to #%d", v.id, v.endpoint, v.state, v.lastSequence, x.state, x.lastSequence())
	}
	return ""
}

// 5. Every stream opened during the fault ends with the terminal event the database holds,
// possibly after reconnecting with Last-Event-ID, and delivers each sequence once, in order.
func checkStreams(streams []followed, db map[string]*dbExecution) []string {
	var out []string
	for _, f := range streams {
		if f.terminal == "" {
			out = append(out, fmt.Sprintf("%s: the stream opened at %s never reached a terminal event (%d reconnects, last error %q)", f.id, f.firstBase, f.reconnects, f.lastErr))
			continue
		}
		for i := 1; i < len(f.sequences); i++ {
			if f.sequences[i] != f.sequences[i-1]+1 {
				out = append(out, fmt.Sprintf("%s: the stream delivered #%d after #%d", f.id, f.sequences[i], f.sequences[i-1]))
				break
			}
		}
		if x := db[f.id]; x != nil && len(x.events) > 0 {
			if last := x.events[len(x.events)-1]; last.typ != f.terminal || last.sequence != f.sequences[len(f.sequences)-1] {
				out = append(out, fmt.Sprintf("%s: the stream ended with %s #%d, the database with %s #%d", f.id, f.terminal, f.sequences[len(f.sequences)-1], last.typ, last.sequence))
			}
		}
	}
	return out
}

// 6. No request waited longer than its bound (requestBound). Requests a frozen node held are
// excluded by the caller: a process that does not run cannot answer, whatever its code says.
// Requests in flight when the database froze are counted from its return (sinceDatabaseReturned).
func checkLatency(requests []request, bound func(viaBalancer bool) time.Duration) []string {
	var out []string
	for _, r := range requests {
		if b := bound(r.viaBalancer()); r.latency > b {
			out = append(out, fmt.Sprintf("a start sent at %s to %s waited %s (bound %s): status %d %s %s", r.at.Format("15:04:05.000"), r.target, r.latency.Round(time.Millisecond), b, r.status, r.code, r.err))
		}
	}
	return out
}

// 7. Each node's log lines from the fault's injection to the end of its checks stay within
// logLinesPerFault.
func checkLogLines(lines map[string]int, bound int) []string {
	var out []string
	for name, n := range lines {
		if n > bound {
			out = append(out, fmt.Sprintf("node %s wrote %d log lines during the fault (bound %d)", name, n, bound))
		}
	}
	return out
}

// 8. Every stream held on a node cut off from the database (opened there before the cut) ends
// there before the cut heals: a node that can no longer vouch for its lease ends its streams
// within the lease, rather than holding them on keep-alives until the network comes back. It
// ends at a message boundary with nothing invented (no terminal event the node could not
// know: invariant 5 compares the terminal event with the database's), and the client resumes
// at another node, from its Last-Event-ID, without gap or duplicate (invariant 5 again). A
// stream whose execution finished before the cut simply ended with its terminal event.
func checkHeldStreams(streams []followed, cutBase string, healed time.Time) []string {
	var out []string
	for _, f := range streams {
		if len(f.conns) == 0 || f.conns[0].base != cutBase || f.conns[0].opened.IsZero() {
			out = append(out, fmt.Sprintf("%s: the stream was not open at the cut node %s before the fault", f.id, cutBase))
			continue
		}
		first := f.conns[0]
		switch {
		case first.ended.IsZero() || first.ended.After(healed):
			out = append(out, fmt.Sprintf("%s: the stream held on the cut node ended %s after the network healed (%d events on it)", f.id, first.ended.Sub(healed).Round(time.Millisecond), first.events))
		case first.terminal:
		case !first.clean:
			out = append(out, fmt.Sprintf("%s: the stream held on the cut node broke instead of ending cleanly (%d events on it; %s)", f.id, first.events, f.lastErr))
		case len(f.conns) < 2 || f.conns[1].base == cutBase:
			out = append(out, fmt.Sprintf("%s: the stream held on the cut node did not resume at another node", f.id))
		}
	}
	return out
}
