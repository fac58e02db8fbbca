package backend

import (
	"context"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// liveHandle is an execution running (or finishing) in this process.
type liveHandle struct {
	r *Runtime
	x *execution
}

func (h liveHandle) snapshot(ctx context.Context) (api.Execution, error) {
	if err := h.r.awaitSettled(ctx, h.x); err != nil {
		return api.Execution{}, err
	}
	return h.x.snapshot(), nil
}

func (h liveHandle) events(ctx context.Context, after int64, limit int) ([]Event, error) {
	if err := h.r.awaitSettled(ctx, h.x); err != nil {
		return nil, err
	}
	return h.r.readLive(h.x, after, limit)
}

func (h liveHandle) follow(s *Subscription) error {
	s.x = h.x
	return nil
}

func (h liveHandle) cancel(ctx context.Context, reason *string) (api.Execution, error) {
	return h.r.cancelLive(ctx, h.x, reason)
}

func (h liveHandle) respond(_ context.Context, actionID string, decode func() (api.ActionResponse, error)) (api.Execution, error) {
	return h.r.respondLive(h.x, actionID, decode)
}
