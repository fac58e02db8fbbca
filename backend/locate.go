package backend

import (
	"context"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Where an execution lives: locate answers with a Handle (handle.go) — live here
// (handle_live.go), finished here or stored (below), or another node's (Cluster.Remote).

// locate is the one place that answers "where does execution id live" for the caller's tenant
// (ctx). Another tenant's execution answers NOT_FOUND exactly as an unknown id does, and after
// the same reads: the live map, the cache of finished executions and one store read happen in
// both cases (only the owner's hits may skip the store).
func (r *Runtime) locate(ctx context.Context, id string) (Handle, error) {
	tenant := TenantFrom(ctx).ID
	return r.locateFor(id, func(owner string) bool { return owner == tenant })
}

// locateFor is locate with the tenant check given as belongs (commands from other nodes were
// checked where they were posted: they pass one that admits every tenant).
func (r *Runtime) locateFor(id string, belongs func(tenant string) bool) (Handle, error) {
	x := r.live.get(id)
	if x != nil && belongs(x.tenant()) {
		if r.cluster == nil || r.cluster.Sure() {
			return liveHandle{r, x}, nil
		}
		// This node cannot vouch for its lease: another node may have claimed it and failed x
		// already. The store is the truth (a stalled one answers UNAVAILABLE).
		rec, found, err := r.store.Execution(id)
		if err != nil {
			return nil, internalError("read execution", err)
		}
		if !found {
			return nil, errExecutionNotFound(id)
		}
		return r.storedOrRemote(rec), nil
	}
	if l, ok := r.finishedLogs.get(id); ok && x == nil && belongs(l.tenant) {
		if r.cluster == nil {
			return finishedHandle{r, l}, nil
		}
		// On a shared store another node may have deleted its conversation a moment ago, before
		// this node's hub read the erasure's marker (which drops the entry): the record's
		// presence is checked (one key read; the log is still served from memory), so a deleted
		// execution answers NOT_FOUND on every node at once.
		_, found, err := r.store.Execution(id)
		if err != nil {
			return nil, r.damage.readError(DamagedExecution, id, "read execution", err)
		}
		if !found {
			r.finishedLogs.remove(id)
			return nil, errExecutionNotFound(id)
		}
		return finishedHandle{r, l}, nil
	}
	rec, found, err := r.store.Execution(id)
	if err != nil {
		return nil, r.damage.readError(DamagedExecution, id, "read execution", err)
	}
	if !found || x != nil || !belongs(rec.Tenant) {
		return nil, errExecutionNotFound(id)
	}
	return r.storedOrRemote(rec), nil
}

// storedOrRemote is the handle of an execution that does not run in this process: its stored
// record, terminal, or (only on a shared store) run by another node.
func (r *Runtime) storedOrRemote(rec store.Execution) Handle {
	if isTerminalState(rec.Execution.State) {
		return storedHandle{r, rec}
	}
	if r.cluster == nil {
		// Impossible on one node: an execution is live from before its start is visible until
		// after its terminal commit, and Open fails every leftover before serving. Reads still
		// answer with the record; nothing can act on it.
		r.log.Error("an unfinished execution is not running in this process", "execution", rec.Execution.ID, "state", rec.Execution.State)
		return storedHandle{r, rec}
	}
	return r.cluster.Remote(rec)
}

// finishedHandle is an execution that finished recently in this process.
type finishedHandle struct {
	r   *Runtime
	log *finishedLog
}

func (h finishedHandle) Snapshot(context.Context) (api.Execution, error) {
	return h.log.execution()
}

func (h finishedHandle) Events(_ context.Context, after int64, limit int) ([]Event, error) {
	return h.log.after(after, limit), nil
}

// Follow reads the log the handle holds: it is complete and immutable, so a subscription
// (a client that opens its stream after a fast execution ended, as a client that starts and
// then streams usually does) costs no second lookup of the cache, let alone a store read, and
// an entry the cache drops meanwhile is still served whole.
func (h finishedHandle) Follow() (EventSource, error) {
	return finishedSource{h.r, h.log}, nil
}

// finishedSource is the EventSource of a finished execution whose complete log is in memory.
type finishedSource struct {
	r   *Runtime
	log *finishedLog
}

func (f finishedSource) Ready(int64) <-chan struct{} { return closedChan }

func (f finishedSource) Exhausted(cursor int64) bool { return cursor >= f.log.lastSequence() }

func (f finishedSource) AwaitingAction() bool { return false }

func (f finishedSource) Release() {}

func (f finishedSource) Read(cursor int64, max int) ([]Event, bool, error) {
	if err := f.r.checkOpen(); err != nil {
		return nil, true, err
	}
	return f.log.after(cursor, max), true, nil
}

// Cancel of a finished execution returns it as it is (no event; the reason is discarded).
func (h finishedHandle) Cancel(context.Context, *string) (api.Execution, error) {
	return h.log.execution()
}

// Respond: a terminal execution has nothing pending.
func (h finishedHandle) Respond(_ context.Context, actionID string, _ func() (api.ActionResponse, error)) (api.Execution, error) {
	return api.Execution{}, h.r.actionNotPending(h.log.id, actionID)
}

// storedHandle is a terminal execution read from the store.
type storedHandle struct {
	r   *Runtime
	rec store.Execution
}

func (h storedHandle) Snapshot(context.Context) (api.Execution, error) {
	return cloneExecution(h.rec.Execution), nil
}

func (h storedHandle) Events(_ context.Context, after int64, limit int) ([]Event, error) {
	return h.r.readStored(h.rec.Execution.ID, after, limit)
}

func (h storedHandle) Follow() (EventSource, error) {
	last, err := h.r.store.LastSequence(h.rec.Execution.ID)
	if err != nil {
		return nil, internalError("read last sequence", err)
	}
	return storedLog{h.r, h.rec.Execution.ID, last}, nil
}

func (h storedHandle) Cancel(context.Context, *string) (api.Execution, error) {
	return cloneExecution(h.rec.Execution), nil
}

func (h storedHandle) Respond(_ context.Context, actionID string, _ func() (api.ActionResponse, error)) (api.Execution, error) {
	return api.Execution{}, h.r.actionNotPending(h.rec.Execution.ID, actionID)
}
