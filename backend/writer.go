package backend

import (
	"sync"
	"sync/atomic"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// eventWriter is the writers' side of a live execution, guarded by writeMu: the record and the
// log's end as of the last change submitted to the store (commit.go). It runs ahead of the
// published view (publishedView) while a submitted change waits for its group commit; the
// two views of the record are the same record at two moments, and neither can stand in for
// the other (see publishedView).
type eventWriter struct {
	writeMu sync.Mutex
	wrec    store.Execution
	nextSeq int64
	// scope is what the conversation and tenant streams select its events by, shared by all
	// of them (store.StoredEvent.Scope); it never changes.
	scope      store.StreamScope
	eventBytes int64       // JSON bytes of the events up to nextSeq (the per-execution limit)
	chain      store.Chain // this execution's failure domain in the store's commit queue; failed = stranded
	// lease is the epoch of this node's cluster lease the execution runs under (0 on a
	// single-node store): every batch of it carries it, and the store refuses them once another
	// node claimed that epoch (fencing.go).
	lease int64
	// strandReported makes the first failure of the chain the one that strands the execution
	// (see stranded.go); later failures of the same chain are the same event.
	strandReported atomic.Bool
	// submitted counts the submissions (written under writeMu, read by awaitSettled).
	submitted atomic.Int64
}

func newEventWriter(rec store.Execution, lease int64) eventWriter {
	return eventWriter{
		wrec:  rec,
		lease: lease,
		scope: store.StreamScope{Tenant: rec.Tenant, ConversationID: rec.Execution.ConversationID, ProviderID: rec.Execution.ProviderID},
	}
}

// state is the writers' current state (the last submitted); callers hold writeMu.
func (w *eventWriter) state() api.ExecutionState { return w.wrec.Execution.State }

// isStranded reports whether the store refused a change of the execution; the caller holds
// writeMu or reads it as a hint.
func (w *eventWriter) isStranded() bool { return w.chain.Err() != nil }
