package cluster

import (
	"context"
	"slices"

	"github.com/harness-edge/harness-edge/backend/store"
)

// Orphans: an execution this node owns in the store but does not run. Nothing else would ever
// finish it — no other node claims a live node's executions, and commands to it wait for an
// answer this node cannot give — so the takeover loop looks for them at each tick and takes
// them over as it takes over a stopped node's: resumed when their provider can re-attach, else
// failed with exactly one run.failed (backend's TakeOver, the one way a record is failed for a
// runner that is gone). The claim that missed an execution committed while it waited on the
// fence (issue 44) left such orphans; the sweep finishes whatever else might.
//
// An execution is an orphan when two consecutive ticks under the same epoch found it owned here
// and not running here: between its record's commit and its entry into the runtime (a
// takeover's resumption) the first tick may see it so, never two ticks a third of a lease
// apart. So an orphan is finished within a lease of becoming one (two ticks, plus the commit).

// orphanSweep is the takeover loop's memory of the previous tick.
type orphanSweep struct {
	epoch    int64
	suspects map[string]bool // owned here, not running here, at the previous tick
}

// orphans returns the executions this node owns and did not run at this tick nor at the
// previous one, leaving aside those already handed to the takeover (pending).
func (c *Cluster) orphans(sweep *orphanSweep, pending []store.Execution) []store.Execution {
	epoch := c.Epoch()
	if epoch == 0 || !c.Sure() {
		*sweep = orphanSweep{} // fenced or unsure: what this node owns is about to change
		return nil
	}
	if sweep.epoch != epoch {
		*sweep = orphanSweep{epoch: epoch}
	}
	ctx, cancel := context.WithTimeout(c.ctx(), c.lease/3)
	owned, err := c.store.OwnedUnfinished(ctx)
	cancel()
	if err != nil {
		c.storeErrors.Error("list the executions this node owns", err)
		return nil
	}
	suspects := map[string]bool{}
	var out []store.Execution
	for _, rec := range owned {
		id := rec.Execution.ID
		if c.host.Runs(id) || slices.ContainsFunc(pending, func(p store.Execution) bool { return p.Execution.ID == id }) {
			continue
		}
		if sweep.suspects[id] {
			out = append(out, rec)
			continue
		}
		suspects[id] = true
	}
	sweep.suspects = suspects
	if len(out) > 0 {
		c.log.Error("this node owned executions it did not run: it takes them over (resumed, or failed with one run.failed)",
			"node", c.node, "epoch", epoch, "executions", len(out))
	}
	return out
}
