package check

import (
	"sort"
	"time"
)

// aliveThrough returns the line of a read that proves a was not terminal
// during all of [lo, hi]: a was acknowledged before lo and a read that began
// after hi still found it unfinished (terminal states never change, so it was
// unfinished in between). 0 when nothing proves it.
func aliveThrough(a *execution, lo, hi time.Time) int {
	if !a.acked || !a.createdHi.Before(lo) || a.lastUnfinished == nil || !a.lastUnfinished.invoke.After(hi) {
		return 0 // the cheap test first: most pairs end here
	}
	first := a.lastUnfinished
	for i := range a.obs {
		if o := &a.obs[i]; !isTerminal(o.state) && o.invoke.After(hi) && o.invoke.Before(first.invoke) {
			first = o // name the earliest proof: the one nearest the start
		}
	}
	return first.line
}

// policyOf is the busy policy a start ran under: its own, else its
// conversation's.
func (ix *index) policyOf(x *execution) string {
	if x.policy != "" {
		return x.policy
	}
	if c := ix.conversations[x.conversation]; c != nil {
		return c.policy
	}
	return ""
}

// sameConversation lists the other executions of x's conversation.
func (ix *index) sameConversation(x *execution) []*execution {
	if ix.byConversation == nil {
		ix.byConversation = map[string][]*execution{}
		for _, id := range ix.order {
			if a := ix.execs[id]; a.conversation != "" {
				ix.byConversation[a.conversation] = append(ix.byConversation[a.conversation], a)
			}
		}
	}
	var out []*execution
	for _, a := range ix.byConversation[x.conversation] {
		if a != x && x.conversation != "" {
			out = append(out, a)
		}
	}
	return out
}

// checkBusyPolicies: under reject no start is accepted while another
// execution of its conversation is unfinished; under enqueue and interrupt
// a start waits for every unfinished one (waitingFor), runs only after they
// ended, and under interrupt they end cancelled.
func checkBusyPolicies(ix *index, rep *Report) {
	for _, id := range ix.order {
		b := ix.execs[id]
		lo, hi, ok := b.created()
		if !ok {
			continue
		}
		policy := ix.policyOf(b)
		switch policy {
		case "reject":
			for _, a := range ix.sameConversation(b) {
				if line := aliveThrough(a, lo, hi); line != 0 {
					rep.add(RejectTwoRunning, b.id, []int{ix.lineOf[a.acks[0]], ix.lineOf[b.acks[0]], line}, "accepted under reject while %s of conversation %s was unfinished", a.id, b.conversation)
				}
			}
		case "enqueue", "interrupt":
			waits := map[string]bool{}
			for _, w := range b.waitingFor {
				waits[w] = true
			}
			for _, a := range ix.sameConversation(b) {
				if line := aliveThrough(a, lo, hi); line != 0 && !waits[a.id] {
					rep.add(EnqueueMissedTurn, b.id, []int{ix.lineOf[a.acks[0]], ix.lineOf[b.acks[0]], line}, "accepted under %s while %s was unfinished, but its waitingFor %v does not name it", policy, a.id, b.waitingFor)
				}
				if waits[a.id] {
					checkRanAfter(ix, a, b, rep)
					if policy == "interrupt" {
						checkInterrupted(ix, a, b, hi, rep)
					}
				}
			}
		}
	}
}

// checkRanAfter: b waited for a, so b's run.started comes after a's terminal
// event on every conversation stream that shows both, and no read saw b
// running before a read that began later saw a unfinished.
func checkRanAfter(ix *index, a, b *execution, rep *Report) {
	for _, c := range ix.chains() {
		if c.stream != "conversation" {
			continue
		}
		startedAt, endedAt := c.started[b.id], c.ended[a.id]
		if startedAt != 0 && endedAt != 0 && startedAt < endedAt {
			rep.add(EnqueueOutOfOrder, b.id, []int{startedAt, endedAt}, "run.started before the terminal event of %s, which it waits for, on conversation stream %s", a.id, c.root)
			return
		}
	}
	for _, ob := range b.obs {
		if ob.state != "running" && ob.state != "awaiting_approval" && ob.state != "awaiting_input" {
			continue
		}
		for _, oa := range a.obs {
			if !isTerminal(oa.state) && oa.invoke.After(ob.complete) {
				rep.add(EnqueueOutOfOrder, b.id, []int{ob.line, oa.line}, "read %s while %s, which it waits for, was still %s", ob.state, a.id, oa.state)
				return
			}
		}
	}
}

// checkInterrupted: an interrupted predecessor ends cancelled, unless it
// ended otherwise before the cancel could reach it (within the cancel bound
// of the interrupting start's acknowledgement).
func checkInterrupted(ix *index, a, b *execution, acked time.Time, rep *Report) {
	bound := 2 * ix.lease()
	if ix.run != nil && ix.run.Settings.CancelBound > 0 {
		bound = ix.run.Settings.CancelBound.Std()
	}
	var ends []sighting
	for _, s := range a.sightings {
		if isTerminalEvent(s.ev.Type) {
			ends = append(ends, s)
		}
	}
	sort.Slice(ends, func(i, j int) bool { return ends[i].ev.Sequence < ends[j].ev.Sequence })
	if len(ends) == 0 || ends[0].ev.Type == "run.cancelled" {
		return
	}
	if ends[0].time.After(acked.Add(bound)) {
		rep.add(InterruptNotCancelled, a.id, []int{ix.lineOf[b.acks[0]], ends[0].line.No}, "interrupted by %s but ended %s %v after that start was acknowledged (cancel bound %v)", b.id, ends[0].ev.Type, ends[0].time.Sub(acked).Round(time.Millisecond), bound)
	}
}

// checkMaxRunning: a start is not admitted while max_running executions of
// its tenant are provably unfinished.
func checkMaxRunning(ix *index, rep *Report) {
	if ix.run == nil || ix.run.Settings.MaxRunning <= 0 {
		return
	}
	limit := ix.run.Settings.MaxRunning
	// Each tenant's acknowledged executions by the latest their creation can
	// be: only those created before a start began can count against it.
	byTenant := map[string][]*execution{}
	for _, id := range ix.order {
		if a := ix.execs[id]; a.acked {
			byTenant[a.tenant] = append(byTenant[a.tenant], a)
		}
	}
	for _, xs := range byTenant {
		sort.Slice(xs, func(i, j int) bool { return xs[i].createdHi.Before(xs[j].createdHi) })
	}
	for _, id := range ix.order {
		b := ix.execs[id]
		lo, hi, ok := b.created()
		if !ok {
			continue
		}
		lines := []int{ix.lineOf[b.acks[0]]}
		for _, a := range byTenant[b.tenant] {
			if !a.createdHi.Before(lo) {
				break
			}
			if line := aliveThrough(a, lo, hi); a != b && line != 0 {
				lines = append(lines, line)
			}
		}
		if len(lines)-1 >= limit {
			rep.add(MaxRunningExceeded, b.id, lines, "admitted while %d executions of tenant %q were unfinished (max_running %d)", len(lines)-1, b.tenant, limit)
		}
	}
}
