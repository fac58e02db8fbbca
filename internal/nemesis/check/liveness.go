package check

import (
	"time"

	"github.com/harness-edge/harness-edge/internal/nemesis/history"
)

// disruptive faults leave a node unable to answer or to commit: a request to
// it during one (or within a lease after it ended, while it recovers) is
// excused from its bound.
var disruptive = map[string]bool{"kill": true, "stop": true, "cut-silent": true, "cut-reset": true, "pg-crash": true, "pg-stall": true}

// excused returns the line of a disruptive fault on node (or on PostgreSQL)
// that overlaps [from, to] widened by grace after its end, or 0.
func (ix *index) excused(node string, from, to time.Time, grace time.Duration) int {
	for _, w := range ix.faults {
		if !disruptive[w.fault] || (w.target != node && w.target != "postgres") {
			continue
		}
		if !w.start.After(to) && !w.end.Add(grace).Before(from) {
			return w.startLine
		}
	}
	return 0
}

func (ix *index) lease() time.Duration {
	if ix.run == nil {
		return 0
	}
	return ix.run.Lease.Std()
}

// checkLiveness: after the quiet period every execution is terminal and the
// final views agree; every :cancel and respond was answered within its bound
// (docs/scale-out.md: two leases) unless its node was down or cut off.
func checkLiveness(ix *index, rep *Report) {
	if len(ix.finals) > 0 {
		for _, id := range ix.order {
			x := ix.execs[id]
			if ix.deletedOnPurpose(x) {
				continue
			}
			checkFinalViews(ix, x, rep)
		}
	}
	var cancelBound, respondBound time.Duration
	if ix.run != nil {
		cancelBound, respondBound = ix.run.Settings.CancelBound.Std(), ix.run.Settings.RespondBound.Std()
	}
	if cancelBound == 0 {
		cancelBound = 2 * ix.lease()
	}
	if respondBound == 0 {
		respondBound = 2 * ix.lease()
	}
	for _, r := range ix.requests {
		switch r.Op {
		case "cancel":
			checkBound(ix, r, cancelBound, CancelUnbounded, rep)
		case "respond":
			checkBound(ix, r, respondBound, RespondUnbounded, rep)
		}
	}
}

func checkFinalViews(ix *index, x *execution, rep *Report) {
	var first *history.Final
	for _, f := range x.finals {
		if f.State == "" {
			continue
		}
		line := finalLine(ix, f)
		if !isTerminal(f.State) {
			rep.add(NotTerminal, x.id, []int{line}, "still %s on node %s after the quiet period", f.State, f.Node)
		}
		if first == nil {
			first = f
		} else if f.State != first.State {
			rep.add(FinalViewsDisagree, x.id, []int{finalLine(ix, first), line}, "node %s reads %s, node %s reads %s", first.Node, first.State, f.Node, f.State)
		}
	}
}

func checkBound(ix *index, r *history.Request, bound time.Duration, name string, rep *Report) {
	if bound == 0 {
		return
	}
	took := r.Complete.Sub(r.Invoke)
	if r.Answered() && took <= bound {
		return
	}
	if ix.excused(r.Node, r.Invoke, r.Complete, ix.lease()) != 0 {
		return
	}
	if !r.Answered() {
		rep.add(name, r.ExecutionID, []int{ix.lineOf[r]}, "%s on node %s got no answer after %v (%s) while no fault touched the node (bound %v)", r.Op, r.Node, took.Round(time.Millisecond), r.Error, bound)
		return
	}
	rep.add(name, r.ExecutionID, []int{ix.lineOf[r]}, "%s on node %s answered %d after %v, beyond its bound %v, while no fault touched the node", r.Op, r.Node, r.Status, took.Round(time.Millisecond), bound)
}
