package backend

import (
	"context"

	"github.com/harness-edge/harness-edge/backend/store"
)

// where says where an execution lives, as this runtime sees it.
type where int

const (
	// liveHere: running (or finishing) in this process; location.x is the live execution.
	liveHere where = iota + 1
	// finishedHere: finished recently in this process; its record and complete log are in
	// memory (location.log).
	finishedHere
	// stored: only in the store, and nothing runs it here: terminal (or, for a moment, a start
	// whose record is committed but not yet admitted). location.rec is the record.
	stored
	// elsewhere: in a store shared by several nodes, not terminal, and not running in this
	// process: run by location.rec.Owner, reached through the store (cluster_*.go). Impossible
	// on a single-node store: recovery fails every leftover at Open, and this process is the
	// only writer.
	elsewhere
)

// location is the answer of locate.
type location struct {
	where where
	x     *execution   // liveHere
	log   *finishedLog // finishedHere
	rec   store.Execution
}

// locate is the one place that answers "where does execution id live" for the caller's tenant
// (ctx). Another tenant's execution answers NOT_FOUND exactly as an unknown id does, and after
// the same reads: the live map, the cache of finished executions and one store read happen in
// both cases (only the owner's hits may skip the store).
func (r *Runtime) locate(ctx context.Context, id string) (location, error) {
	tenant := TenantFrom(ctx).ID
	x := r.liveExecution(id)
	if x != nil && x.tenant() == tenant {
		if r.coord == nil || r.coord.sure() {
			return location{where: liveHere, x: x}, nil
		}
		// This node cannot vouch for its lease: another node may have claimed it and failed x
		// already. The store is the truth (a stalled one answers UNAVAILABLE).
		rec, found, err := r.store.Execution(id)
		if err != nil {
			return location{}, internalError("read execution", err)
		}
		if !found {
			return location{}, errExecutionNotFound(id)
		}
		if !isTerminalState(rec.Execution.State) {
			return location{where: elsewhere, rec: rec}, nil
		}
		return location{where: stored, rec: rec}, nil
	}
	if l, ok := r.finishedLogs.get(id); ok && x == nil && l.rec.Tenant == tenant {
		return location{where: finishedHere, log: l, rec: l.rec}, nil
	}
	rec, found, err := r.store.Execution(id)
	if err != nil {
		return location{}, r.readError(DamagedExecution, id, "read execution", err)
	}
	if !found || x != nil || rec.Tenant != tenant {
		return location{}, errExecutionNotFound(id)
	}
	if r.cluster != nil && !isTerminalState(rec.Execution.State) {
		// Not running in this process: the node that does is reached through the store
		// (cluster_*.go). Usually another node; this one only while it is fenced, or for the
		// moment between a start's commit and its admission (commands addressed to this node
		// wait for it).
		return location{where: elsewhere, rec: rec}, nil
	}
	return location{where: stored, rec: rec}, nil
}
