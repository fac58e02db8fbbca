package backend

import (
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/harness-edge/harness-edge/backend/store"
)

// clusterHost is the runtime as its cluster sees it (ClusterHost, cluster.go): what the cluster
// may ask of the runtime, each a call into the room that does it.

// clusterHost is the runtime as its cluster sees it.
type clusterHost struct{ r *Runtime }

func (h clusterHost) Store() store.Store { return h.r.store }

func (h clusterHost) Logger() *slog.Logger { return h.r.log }

func (h clusterHost) Tracer() trace.Tracer { return h.r.spans.tracer }

func (h clusterHost) HotWindow() int { return h.r.hotWindow }

func (h clusterHost) Runs(id string) bool { return h.r.live.get(id) != nil }

func (h clusterHost) Track(fn func()) bool { return h.r.track(fn) }

func (h clusterHost) CheckOpen() error { return h.r.checkOpen() }

func (h clusterHost) Fence(epoch int64) int { return h.r.fenceEpoch(epoch) }

func (h clusterHost) Locate(id string) (Handle, error) {
	return h.r.locateFor(id, func(string) bool { return true })
}

func (h clusterHost) CheckResponse(rec store.Execution, actionID string) error {
	return h.r.checkStoredResponse(rec, actionID)
}

func (h clusterHost) ActionNotPending(executionID, actionID string) error {
	return h.r.actionNotPending(executionID, actionID)
}

func (h clusterHost) StoredEvents(id string, after int64, limit int) ([]Event, error) {
	return h.r.readStored(id, after, limit)
}

func (h clusterHost) TakeOver(claimed []store.Execution, epoch int64, stop <-chan struct{}) []store.Execution {
	return h.r.takeOver(claimed, epoch, stop)
}
