package backend

import (
	"context"
	"iter"
)

// The protocol's reads of an execution's events: a page of them (ListEvents) and the in-process
// iterator (FollowExecution) over its stream (OpenStream, stream.go). Each locates the execution and
// reads what its handle gives.

// ListEvents returns events with sequence > after, at most limit (limit <= 0 means no limit), and
// the next cursor (the last returned sequence, or after itself when none). NOT_FOUND if unknown.
func (r *Runtime) ListEvents(ctx context.Context, executionID string, after int64, limit int) ([]Event, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, after, err
	}
	if err := r.checkOpen(); err != nil {
		return nil, after, err
	}
	if after < 0 {
		return nil, after, newError(CodeValidation, "Event cursor must be a non-negative integer")
	}
	h, err := r.locate(ctx, executionID)
	if err != nil {
		return nil, after, err
	}
	events, err := h.Events(ctx, after, limit)
	if err != nil {
		return nil, after, err
	}
	next := after
	if len(events) > 0 {
		next = events[len(events)-1].Sequence
	}
	return events, next, nil
}

// FollowExecution is the in-process iterator of an execution's stream (OpenStream), as ctx's tenant:
// every event after the cursor exactly once, in order, ending after the terminal event or when
// ctx ends (yielding ctx.Err()), or with UNAVAILABLE when this node can no longer vouch for its
// cluster lease (resume elsewhere).
func FollowExecution(ctx context.Context, r *Runtime, executionID string, after int64) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		sub, err := r.OpenStream(ctx, StreamRequest{ExecutionID: executionID, After: after})
		if err != nil {
			yield(Event{}, err)
			return
		}
		defer sub.Close()
		for {
			if err := ctx.Err(); err != nil {
				yield(Event{}, err)
				return
			}
			ready := sub.Ready()
			events, done, err := sub.Read(256)
			if err != nil {
				yield(Event{}, err)
				return
			}
			for _, e := range events {
				if !yield(e, nil) {
					return
				}
			}
			if done {
				return
			}
			if len(events) > 0 {
				continue
			}
			select {
			case <-ready:
			case <-sub.Lapsed(): // Read reports it
			case <-ctx.Done():
				yield(Event{}, ctx.Err())
				return
			}
		}
	}
}
