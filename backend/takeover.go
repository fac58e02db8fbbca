package backend

import (
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
)

// takeOver finishes what stopped nodes left, for the executions this node claimed (its
// cluster's takeover loop calls it through ClusterHost): an execution whose provider can
// re-attach (a Resumer registered here) continues on this node, as it would after a restart of
// its own node; every other one fails with PROVIDER_ERROR naming the stopped node, exactly one
// run.failed after the last stored event and its pending action abandoned (it answers
// ACTION_NOT_FOUND), as restart recovery does, many per commit. What could not be done (the
// store refused) is returned, and the next tick tries it again: nobody else will, since the
// claim made this node responsible for them.
func (r *Runtime) takeOver(taken []store.Execution, epoch int64, stop <-chan struct{}) (left []store.Execution) {
	if len(taken) == 0 {
		return nil
	}
	began := time.Now()
	var toFail []store.Execution
	for _, rec := range taken {
		if !r.canResume(rec) && !waitsForTurn(rec, r.hasProvider) {
			toFail = append(toFail, rec)
			continue
		}
		if err := r.resumeTakenOver(rec, epoch); err != nil {
			r.log.Error("take over an execution of a stopped node", "execution", rec.Execution.ID, "node", rec.Owner, "err", err)
			left = append(left, rec)
		}
	}
	failed, notFailed, err := failAbandoned(r.store, epoch, time.Now(), toFail, func(rec store.Execution) string {
		return NodeStoppedMessage(rec.Owner)
	}, r.damage.reportUndecodable, stop)
	if err != nil {
		r.storeErrors.Error("fail the executions of a stopped node", err, "left", len(notFailed))
	}
	left = append(left, notFailed...)
	r.observer.EventsAppended(failed)
	r.approvals.wakeExpiry() // the resumed executions' actions may be due already (approvaldesk.go)
	if n := len(taken) - len(left); n > 0 {
		r.log.Warn("took over the executions of stopped nodes", "count", n, "failed", failed, "took", time.Since(began).Round(time.Millisecond))
	}
	return left
}

// resumeTakenOver makes this node the owner of rec (commands reach it here from now on) and
// resumes it.
func (r *Runtime) resumeTakenOver(rec store.Execution, epoch int64) error {
	rec.Owner = r.node
	if err := r.store.Commit(&store.Batch{Executions: []store.Execution{rec}, Lease: epoch}); err != nil {
		return err
	}
	return r.resumeExecution(rec)
}
