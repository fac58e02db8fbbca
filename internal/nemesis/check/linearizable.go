package check

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/anishathalye/porcupine"
)

// The protocol's state machine (docs/protocol.md §4.1, plus what this
// runtime adds: a waiting execution cancelled at once, a queued one failed by
// recovery): the states each state may go to next.
var next = map[string][]string{
	"":                  {"queued"}, // not yet created
	"queued":            {"starting", "running", "cancelling", "cancelled", "failed"},
	"starting":          {"running", "cancelling", "failed"},
	"running":           {"succeeded", "awaiting_input", "awaiting_approval", "failed", "cancelling"},
	"awaiting_input":    {"running", "failed", "cancelling"},
	"awaiting_approval": {"running", "failed", "cancelling"},
	// cancelling may also end failed: a takeover or a restart fails every
	// unfinished execution of a stopped node (backend/recovery.go addFailure).
	"cancelling": {"cancelled", "failed"},
}

// reachable reports whether to is from itself or after any number of forward
// transitions: a read may see any of them, because the server changes state
// on its own between two client operations.
func reachable(from, to string) bool {
	if from == to {
		return true
	}
	seen := map[string]bool{from: true}
	queue := []string{from}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, n := range next[s] {
			if n == to {
				return true
			}
			if !seen[n] {
				seen[n] = true
				queue = append(queue, n)
			}
		}
	}
	return false
}

// version is what one operation showed of an execution: its state and the
// record's updatedAt (refreshed on every state change), which tells a
// running after an approval from the running before it.
type version struct {
	state   string
	updated time.Time
}

// follows reports whether v may be observed after cur has been: a forward
// transition (never to an older updatedAt), or the same state with the same
// or a later updatedAt.
func (v version) follows(cur version) bool {
	older := !v.updated.IsZero() && !cur.updated.IsZero() && v.updated.Before(cur.updated)
	if older {
		return false
	}
	if v.state == cur.state {
		return true
	}
	return reachable(cur.state, v.state)
}

// stateModel is the nondeterministic model porcupine checks each
// execution's operations against: every operation (start, get, list,
// cancel, respond, final read) returns a version; from the current version
// the system may have moved through any forward transitions, so the next
// states are the observed version when it follows the current one, else
// none.
var stateModel = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{version{}} },
	Step: func(state, input, output interface{}) []interface{} {
		cur, v := state.(version), output.(version)
		if v.follows(cur) {
			return []interface{}{v}
		}
		return nil
	},
	Equal: func(a, b interface{}) bool {
		x, y := a.(version), b.(version)
		return x.state == y.state && x.updated.Equal(y.updated)
	},
	DescribeOperation: func(input, output interface{}) string {
		v := output.(version)
		return fmt.Sprintf("%v -> %s@%s", input, v.state, v.updated.Format(time.RFC3339Nano))
	},
}

// checkLinearizable runs porcupine on each execution's operations (the
// history partitioned by execution). On Illegal it names a stale read: a
// read whose version does not follow one acknowledged before the read began,
// found by comparing pairs (the explanation, not the decision: porcupine
// decides).
func checkLinearizable(ix *index, rep *Report, timeout time.Duration, visualize string) {
	model := stateModel.ToModel()
	for _, id := range ix.order {
		x := ix.execs[id]
		if len(x.obs) < 2 {
			continue
		}
		ops := make([]porcupine.Operation, len(x.obs))
		for i, o := range x.obs {
			ops[i] = porcupine.Operation{ClientId: i, Input: o.op, Call: o.invoke.UnixNano(), Output: version{o.state, o.updated}, Return: o.complete.UnixNano()}
		}
		rep.Linearized++
		rep.Operations += len(ops)
		switch porcupine.CheckOperationsTimeout(model, ops, timeout) {
		case porcupine.Ok:
		case porcupine.Unknown:
			rep.note("execution %s: linearizability undecided within %v (%d operations)", id, timeout, len(ops))
		case porcupine.Illegal:
			reportStaleRead(x, rep)
			if visualize != "" {
				writeVisualization(model, ops, timeout, filepath.Join(visualize, id+".html"), rep)
			}
		}
	}
}

func reportStaleRead(x *execution, rep *Report) {
	for _, a := range x.obs {
		for _, b := range x.obs {
			if !a.complete.Before(b.invoke) {
				continue
			}
			va, vb := version{a.state, a.updated}, version{b.state, b.updated}
			if !vb.follows(va) {
				rep.add(StaleRead, x.id, []int{a.line, b.line}, "%s read %s (updatedAt %s) after %s had returned %s (updatedAt %s)", b.op, b.state, stamp(b.updated), a.op, a.state, stamp(a.updated))
				return
			}
		}
	}
	lines := make([]int, len(x.obs))
	for i, o := range x.obs {
		lines[i] = o.line
	}
	rep.add(StaleRead, x.id, lines, "its observed states are not linearizable against the state machine")
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format(time.RFC3339Nano)
}

// writeVisualization writes porcupine's own page of an execution's
// operations and the longest linearization it found, for a person to see
// where the history stops fitting the state machine.
func writeVisualization(model porcupine.Model, ops []porcupine.Operation, timeout time.Duration, path string, rep *Report) {
	_, info := porcupine.CheckOperationsVerbose(model, ops, timeout)
	if err := porcupine.VisualizePath(model, info, path); err != nil {
		rep.note("visualization %s: %v", path, err)
		return
	}
	rep.note("porcupine's visualization: %s", path)
}
