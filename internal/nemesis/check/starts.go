package check

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/harness-edge/harness-edge/internal/nemesis/history"
)

// checkStarts: every acknowledged start exists after the quiet period on
// every view the final reads took, one execution per idempotency key, and a
// start the server refused (4xx, 503) created nothing unless an attempt with
// its key was acknowledged or got no clear answer.
func checkStarts(ix *index, rep *Report) {
	checkAcknowledgedExist(ix, rep)
	checkOneExecutionPerKey(ix, rep)
	checkRefusedStartsCreatedNothing(ix, rep)
}

func checkAcknowledgedExist(ix *index, rep *Report) {
	if len(ix.finals) == 0 {
		rep.note("no final reads: acknowledged starts, liveness, budgets and usage totals were not checked")
		return
	}
	for _, id := range ix.order {
		x := ix.execs[id]
		if len(x.acks) == 0 || ix.deletedOnPurpose(x) {
			continue
		}
		ack := ix.lineOf[x.acks[0]]
		found := false
		for _, f := range x.finals {
			if f.Status == 404 {
				rep.add(StartMissing, id, []int{ack, finalLine(ix, f)}, "start acknowledged (202) but node %s answers 404 after the quiet period", f.Node)
				continue
			}
			if f.State != "" || f.Status/100 == 2 {
				found = true
			}
		}
		switch {
		case !found && len(x.finals) == 0:
			rep.add(StartMissing, id, []int{ack}, "start acknowledged (202) but no final read found the execution")
		case !found && !anyStatus(x.finals, 404):
			rep.note("execution %s: no final read of it was answered", id)
		}
	}
}

// deletedOnPurpose: a conversation deleted by a client leaves the views.
func (ix *index) deletedOnPurpose(x *execution) bool {
	c := ix.conversations[x.conversation]
	return c != nil && c.deleted
}

func finalLine(ix *index, f *history.Final) int { return ix.finalLineOf[f] }

func checkOneExecutionPerKey(ix *index, rep *Report) {
	type key struct{ conv, key string }
	ids := map[key]map[string][]int{}
	for _, r := range ix.requests {
		if r.Op != "start" || !r.OK() {
			continue
		}
		var b startBody
		if json.Unmarshal(r.Body, &b) != nil || b.IdempotencyKey == "" {
			continue
		}
		snaps := answerSnapshots(r.Answer)
		if len(snaps) != 1 {
			continue
		}
		k := key{b.ConversationID, b.IdempotencyKey}
		if ids[k] == nil {
			ids[k] = map[string][]int{}
		}
		ids[k][snaps[0].ID] = append(ids[k][snaps[0].ID], ix.lineOf[r])
	}
	for k, byID := range ids {
		if len(byID) < 2 {
			continue
		}
		var names []string
		var lines []int
		for id, ls := range byID {
			names = append(names, id)
			lines = append(lines, ls...)
		}
		sort.Strings(names)
		rep.add(IdempotencyDuplicate, "", lines, "idempotency key %q in conversation %s acknowledged %d executions: %s", k.key, k.conv, len(names), strings.Join(names, ", "))
	}
}

// refused: the server said no, so nothing may exist (503 and 429 are not
// acknowledgements; neither is any 4xx). A transport error or another 5xx
// leaves it open.
func refused(r *history.Request) bool {
	return r.Status == 503 || (r.Status >= 400 && r.Status < 500)
}

// checkRefusedStartsCreatedNothing attributes each execution no start
// acknowledged to the start attempts that could have made it (same
// conversation and input; the run gives each key its own input): when every
// one of them was refused, a refused start created it.
func checkRefusedStartsCreatedNothing(ix *index, rep *Report) {
	type attempt struct {
		r    *history.Request
		body startBody
	}
	var unanswered []attempt // every start not answered 2xx, its body read once
	for _, r := range ix.requests {
		var b startBody
		if r.Op == "start" && !r.OK() && json.Unmarshal(r.Body, &b) == nil {
			unanswered = append(unanswered, attempt{r, b})
		}
	}
	for _, id := range ix.order {
		x := ix.execs[id]
		if len(x.acks) > 0 {
			continue
		}
		conv := x.conversation
		if conv == "" {
			for _, s := range x.sightings {
				if s.ev.Stream == history.StreamConversation {
					conv = s.ev.Scope
				}
			}
		}
		var candidates []*history.Request
		for _, a := range unanswered {
			r, b := a.r, a.body
			if conv != "" && b.ConversationID != conv {
				continue
			}
			if x.input != nil && b.Input != nil && *x.input != *b.Input {
				continue
			}
			candidates = append(candidates, r)
		}
		if len(candidates) == 0 {
			rep.note("execution %s was seen but no start request could have made it", id)
			continue
		}
		var lines []int
		var statuses []string
		allRefused := true
		for _, r := range candidates {
			if !refused(r) {
				allRefused = false
				break
			}
			lines = append(lines, ix.lineOf[r])
			statuses = append(statuses, fmt.Sprint(r.Status))
		}
		if !allRefused {
			continue
		}
		lines = append(lines, firstSeenLine(ix, x))
		rep.add(RefusedStartExists, id, lines, "exists, but every start that could have made it was refused (status %s) and none with its key was acknowledged", strings.Join(statuses, ", "))
	}
}

func firstSeenLine(ix *index, x *execution) int {
	first := 0
	for _, o := range x.obs {
		if first == 0 || o.line < first {
			first = o.line
		}
	}
	for _, s := range x.sightings {
		if first == 0 || s.line.No < first {
			first = s.line.No
		}
	}
	return first
}

func anyStatus(fs []*history.Final, status int) bool {
	for _, f := range fs {
		if f.Status == status {
			return true
		}
	}
	return false
}
