package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	"github.com/harness-edge/harness-edge/internal/nemesis/history"
)

// chain is one logical stream: a subscription and every resume of it, in the
// order its events arrived.
type chain struct {
	root     string
	stream   string
	filtered bool
	fromZero bool // the first subscription opened without a cursor
	lines    []*history.Line
	// started and ended: the line of each execution's first run.started and
	// first terminal event on this stream.
	started, ended map[string]int
}

// chains are computed once per check.
func (ix *index) chains() []*chain {
	if ix.chainList == nil {
		ix.chainList = chains(ix)
	}
	return ix.chainList
}

// chains groups event lines by the subscription their resumes started from.
func chains(ix *index) []*chain {
	parent := map[string]string{}
	for _, l := range ix.events {
		if e := l.Event; e.ResumedFrom != "" && e.ResumedFrom != e.Subscription {
			parent[e.Subscription] = e.ResumedFrom
		}
	}
	rootOf := func(s string) string {
		for i := 0; i < len(parent)+1; i++ { // bounded: a cycle of resumes ends here
			p, ok := parent[s]
			if !ok {
				break
			}
			s = p
		}
		return s
	}
	byRoot := map[string]*chain{}
	var out []*chain
	for _, l := range ix.events {
		e := l.Event
		r := rootOf(e.Subscription)
		c := byRoot[r]
		if c == nil {
			c = &chain{root: r, stream: e.Stream, started: map[string]int{}, ended: map[string]int{}}
			byRoot[r] = c
			out = append(out, c)
		}
		if e.Subscription == r && e.After == "" {
			c.fromZero = true
		}
		c.filtered = c.filtered || e.Filtered
		c.lines = append(c.lines, l)
		if e.Type == "run.started" && c.started[e.ExecutionID] == 0 {
			c.started[e.ExecutionID] = l.No
		}
		if isTerminalEvent(e.Type) && c.ended[e.ExecutionID] == 0 {
			c.ended[e.ExecutionID] = l.No
		}
	}
	return out
}

// checkStreams: on every stream kind, across resumes, each execution's events
// arrive contiguous from the first one seen (from sequence 1 on a stream
// opened at its beginning), each once, in order; filtered streams skip on
// purpose, so only order and uniqueness hold there. Across all views an
// execution has one terminal event, last, one run.started, and every view
// agrees on what each sequence is.
func checkStreams(ix *index, rep *Report) {
	for _, c := range ix.chains() {
		checkChain(c, rep)
	}
	for _, id := range ix.order {
		checkExecutionEvents(ix.execs[id], rep)
	}
}

func checkChain(c *chain, rep *Report) {
	last := map[string]*history.Line{}
	seen := map[string]map[int64]int{}
	gapped := map[string]bool{}
	gapAll := false
	for _, l := range c.lines {
		e := l.Event
		if e.ExecutionID == "" {
			if e.Type == "stream.gap" {
				gapAll = true // the server said what was trimmed: the next of each may jump
				for id := range last {
					gapped[id] = true
				}
			}
			continue
		}
		id := e.ExecutionID
		if seen[id] == nil {
			seen[id] = map[int64]int{}
		}
		if prev, dup := seen[id][e.Sequence]; dup {
			rep.add(EventDuplicate, id, []int{prev, l.No}, "sequence %d arrived twice on the %s stream (subscription %s)", e.Sequence, c.stream, c.root)
			continue
		}
		seen[id][e.Sequence] = l.No
		p := last[id]
		switch {
		case p != nil && e.Sequence < p.Event.Sequence:
			rep.add(EventOutOfOrder, id, []int{p.No, l.No}, "sequence %d arrived after %d on the %s stream (subscription %s)", e.Sequence, p.Event.Sequence, c.stream, c.root)
			continue
		case c.filtered || gapped[id] || (p == nil && gapAll):
		case p != nil && e.Sequence != p.Event.Sequence+1:
			rep.add(EventGap, id, []int{p.No, l.No}, "sequence %d followed %d on the %s stream (subscription %s): %s missing", e.Sequence, p.Event.Sequence, c.stream, c.root, span(p.Event.Sequence+1, e.Sequence-1))
		case p == nil && c.fromZero && c.stream != history.StreamTenant && e.Sequence != 1:
			rep.add(EventGap, id, []int{l.No}, "the %s stream opened at its beginning showed sequence %d first: %s missing", c.stream, e.Sequence, span(1, e.Sequence-1))
		}
		gapped[id] = false
		last[id] = l
	}
}

func checkExecutionEvents(x *execution, rep *Report) {
	if len(x.sightings) == 0 {
		return
	}
	bySeq := map[int64]sighting{}
	var terminals, starts []sighting
	for _, s := range x.sightings {
		prev, ok := bySeq[s.ev.Sequence]
		if ok {
			switch {
			case prev.ev.Type != s.ev.Type:
				rep.add(EventMismatch, x.id, []int{prev.line.No, s.line.No}, "sequence %d is %s in one view and %s in another", s.ev.Sequence, prev.ev.Type, s.ev.Type)
			case !sameJSON(prev.ev.Data, s.ev.Data):
				rep.add(EventMismatch, x.id, []int{prev.line.No, s.line.No}, "sequence %d (%s) has different contents in two views: %s and %s", s.ev.Sequence, s.ev.Type, prev.ev.Data, s.ev.Data)
			}
			continue
		}
		bySeq[s.ev.Sequence] = s
		if isTerminalEvent(s.ev.Type) {
			terminals = append(terminals, s)
		}
		if s.ev.Type == "run.started" {
			starts = append(starts, s)
		}
	}
	bySequence := func(ss []sighting) {
		sort.Slice(ss, func(i, j int) bool { return ss[i].ev.Sequence < ss[j].ev.Sequence })
	}
	bySequence(terminals)
	bySequence(starts)
	if len(terminals) > 1 {
		rep.add(TwoTerminalEvents, x.id, linesOf(terminals), "%d terminal events (%s at %d, %s at %d)", len(terminals),
			terminals[0].ev.Type, terminals[0].ev.Sequence, terminals[1].ev.Type, terminals[1].ev.Sequence)
	}
	if len(starts) > 1 {
		rep.add(StartedTwice, x.id, linesOf(starts), "run.started at sequences %d and %d: it ran twice", starts[0].ev.Sequence, starts[1].ev.Sequence)
	}
	if len(terminals) > 0 {
		end := terminals[0]
		var after []sighting
		for seq, s := range bySeq {
			if seq > end.ev.Sequence && !isTerminalEvent(s.ev.Type) {
				after = append(after, s)
			}
		}
		if len(after) > 0 {
			bySequence(after)
			rep.add(EventAfterTerminal, x.id, append([]int{end.line.No}, linesOf(after)...), "%s at sequence %d is after the terminal %s at %d", after[0].ev.Type, after[0].ev.Sequence, end.ev.Type, end.ev.Sequence)
		}
		if st := x.terminalState(); st != "" && isTerminal(st) && st != terminalStateOf(end.ev.Type) {
			rep.add(TerminalMismatch, x.id, []int{end.line.No}, "its terminal event is %s but the final read says %s", end.ev.Type, st)
		}
	}
}

// span names the sequences from..to.
func span(from, to int64) string {
	if from == to {
		return fmt.Sprint(from)
	}
	return fmt.Sprintf("%d to %d", from, to)
}

func linesOf(ss []sighting) []int {
	out := make([]int, len(ss))
	for i, s := range ss {
		out[i] = s.line.No
	}
	return out
}

// sameJSON compares two JSON documents by value (member order aside); an
// absent one matches anything (a history that did not keep the data).
func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 || bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
