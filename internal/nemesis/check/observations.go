package check

import "sort"

// addAbsentReads adds each get answered 404 for an execution the history
// knows as an observation of "not created": after an acknowledged start, a
// node that answers 404 shows a state older than one acknowledged.
// A 404 that may be a deletion's (it completed after a delete of the
// execution's conversation was sent) is left out: a deleted conversation
// leaves the views.
func (ix *index) addAbsentReads() {
	for _, r := range ix.requests {
		if r.Op != "get" || r.Status != 404 {
			continue
		}
		id := r.ExecutionID
		if id == "" {
			id = execIDFromPath(r.Path)
		}
		x := ix.execs[id]
		if x == nil || ix.goneBy(x, r.Complete) {
			continue
		}
		x.obs = append(x.obs, observation{state: absent, invoke: r.Invoke, complete: r.Complete, line: ix.lineOf[r], op: "get"})
	}
}

// absent is the version of an execution not created yet.
const absent = ""

// addTerminalReceipts adds, for each execution, the first receipt of its
// terminal event on any stream as an observation of that terminal state at
// the moment it was received: it was committed before, so no read that
// begins later may find the execution unfinished. (Only the terminal event:
// an older non-terminal event may arrive after a newer read, and terminal
// states never change.)
func (ix *index) addTerminalReceipts() {
	for _, x := range ix.execs {
		var first *sighting
		for i := range x.sightings {
			s := &x.sightings[i]
			if isTerminalEvent(s.ev.Type) && !s.ev.T.IsZero() && (first == nil || s.ev.T.Before(first.ev.T)) {
				first = s
			}
		}
		if first != nil {
			x.obs = append(x.obs, observation{state: terminalStateOf(first.ev.Type), invoke: first.ev.T, complete: first.ev.T, line: first.line.No, op: "event " + first.ev.Type})
		}
	}
}

// settle derives, once every observation is in, what the busy and
// max_running checks ask of each execution.
func (ix *index) settle() {
	for _, x := range ix.execs {
		sort.Slice(x.obs, func(i, j int) bool { return x.obs[i].line < x.obs[j].line })
		_, x.createdHi, x.acked = x.created()
		for i := range x.obs {
			o := &x.obs[i]
			if o.state != absent && !isTerminal(o.state) && (x.lastUnfinished == nil || o.invoke.After(x.lastUnfinished.invoke)) {
				x.lastUnfinished = o
			}
		}
	}
}
