package cluster

import (
	"context"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// remoteHandle is an execution another node runs (rec.Owner): reads come from the store, which
// holds only what was committed; its live events are followed through the store (tail.go);
// commands travel to the owner (commands.go). Its owner is this node only while this node is
// fenced, or for the moment a takeover resumes it: commands addressed to this node wait for
// that.
type remoteHandle struct {
	c   *Cluster
	rec store.Execution
}

// Snapshot: every state change is committed before it is published, so the committed record
// is the snapshot.
func (h remoteHandle) Snapshot(context.Context) (api.Execution, error) {
	return backend.CloneExecution(h.rec.Execution), nil
}

func (h remoteHandle) Events(_ context.Context, after int64, limit int) ([]backend.Event, error) {
	return h.c.host.StoredEvents(h.rec.Execution.ID, after, limit)
}

func (h remoteHandle) Follow() (backend.EventSource, error) {
	return h.c.acquireTail(h.rec.Execution.ID)
}

func (h remoteHandle) Cancel(ctx context.Context, reason *string) (api.Execution, error) {
	return h.c.cancelElsewhere(ctx, h.rec, reason)
}

// Respond checks the action against the stored record (in the order a local call does), then
// decodes the body, then the owner applies the response.
func (h remoteHandle) Respond(ctx context.Context, actionID string, decode func() (api.ActionResponse, error)) (api.Execution, error) {
	if err := h.c.host.CheckResponse(h.rec, actionID); err != nil {
		return api.Execution{}, err
	}
	var response api.ActionResponse
	if decode != nil {
		var err error
		if response, err = decode(); err != nil {
			return api.Execution{}, err
		}
	}
	return h.c.respondElsewhere(ctx, h.rec, actionID, response)
}
