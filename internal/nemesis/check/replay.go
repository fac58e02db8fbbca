package check

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/harness-edge/harness-edge/internal/nemesis/history"
)

// StreamReplay is the stream kind the checker gives the events of a JSON
// replay (`GET /v1/executions/{id}/events`, op "events"): one request is one
// view, held to the stream rules like a subscription.
const StreamReplay = "replay"

// addReplay turns a replay's answer into event sightings on a view of its
// own, opened at the beginning when the request had no `after` (or 0).
func (ix *index) addReplay(l *history.Line) {
	r := l.Request
	var page struct {
		Events []json.RawMessage `json:"events"`
	}
	if json.Unmarshal(r.Answer, &page) != nil {
		return
	}
	after := ""
	if i := strings.IndexByte(r.Path, '?'); i >= 0 {
		if q, err := url.ParseQuery(r.Path[i+1:]); err == nil && q.Get("after") != "0" {
			after = q.Get("after")
		}
	}
	sub := fmt.Sprint("replay@", l.No)
	for _, raw := range page.Events {
		var ev struct {
			ExecutionID string `json:"executionId"`
			Sequence    int64  `json:"sequence"`
			Type        string `json:"type"`
		}
		if json.Unmarshal(raw, &ev) != nil || ev.ExecutionID == "" {
			continue
		}
		e := &history.Event{Header: history.Header{Kind: history.KindEvent, T: r.Complete}, Stream: StreamReplay,
			Subscription: sub, Scope: ev.ExecutionID, Node: r.Node, After: after, ExecutionID: ev.ExecutionID,
			Sequence: ev.Sequence, Type: ev.Type, Data: raw}
		ix.addEvent(&history.Line{No: l.No, Kind: history.KindEvent, Event: e})
		ix.replayed++
	}
	if r.Final && after == "" {
		id := r.ExecutionID
		if id == "" {
			id = execIDFromPath(r.Path)
		}
		ix.finalReplays = append(ix.finalReplays, finalReplay{exec: id, line: l.No, events: page.Events})
	}
}

type finalReplay struct {
	exec   string
	line   int
	events []json.RawMessage
}

// checkFinalReplays: after the quiet period, an execution's whole log (a
// replay from the beginning) ends with exactly one terminal event when the
// execution is terminal. (Gaps, repeats and order in it are the stream
// check's.)
func checkFinalReplays(ix *index, rep *Report) {
	for _, fr := range ix.finalReplays {
		x := ix.execs[fr.exec]
		if x == nil || !isTerminal(x.terminalState()) {
			continue
		}
		found := false
		for _, raw := range fr.events {
			var ev struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(raw, &ev) == nil && isTerminalEvent(ev.Type) {
				found = true
			}
		}
		if !found {
			rep.add(TerminalEventMissing, fr.exec, []int{fr.line}, "final state %s, but its log read after the quiet period (%d events) has no terminal event", x.terminalState(), len(fr.events))
		}
	}
}
