package backend

import (
	"context"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// remoteHandle is an execution another node runs (rec.Owner), on a store shared by several
// nodes: reads come from the store, which holds only what was committed; its live events are
// followed through the store (cluster_tail.go); commands travel to the owner
// (cluster_commands.go). Its owner is this node only while this node is fenced, or for the
// moment a takeover resumes it: commands addressed to this node wait for that.
type remoteHandle struct {
	r   *Runtime
	rec store.Execution
}

// snapshot: every state change is committed before it is published, so the committed record
// is the snapshot.
func (h remoteHandle) snapshot(context.Context) (api.Execution, error) {
	return cloneExecution(h.rec.Execution), nil
}

func (h remoteHandle) events(_ context.Context, after int64, limit int) ([]Event, error) {
	return h.r.readStored(h.rec.Execution.ID, after, limit)
}

func (h remoteHandle) follow(s *Subscription) error {
	tail, err := h.r.acquireTail(h.rec.Execution.ID)
	if err != nil {
		return err
	}
	s.tail = tail
	return nil
}

func (h remoteHandle) cancel(ctx context.Context, reason *string) (api.Execution, error) {
	return h.r.cancelElsewhere(ctx, h.rec, reason)
}

func (h remoteHandle) respond(ctx context.Context, actionID string, decode func() (api.ActionResponse, error)) (api.Execution, error) {
	return h.r.respondToStored(ctx, h.rec, actionID, decode)
}
