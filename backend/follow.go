package backend

import (
	"context"
	"iter"
)

// The protocol's reads of an execution's events: a page of them (ListEvents), a subscription
// (Subscribe) and the in-process iterator built on it (Follow). Each locates the execution and
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

// Subscribe positions a subscription after the cursor, as the anonymous tenant. NOT_FOUND if
// unknown.
func (r *Runtime) Subscribe(executionID string, after int64) (*Subscription, error) {
	return r.SubscribeContext(context.Background(), executionID, after)
}

// SubscribeContext positions a subscription after the cursor, as ctx's tenant (see WithTenant);
// ctx only names the tenant and does not bound the subscription. NOT_FOUND if unknown or
// another tenant's; UNAVAILABLE while this node cannot vouch for its cluster lease (the
// subscription would end at once: another node serves it).
func (r *Runtime) SubscribeContext(ctx context.Context, executionID string, after int64) (*Subscription, error) {
	if err := r.checkOpen(); err != nil {
		return nil, err
	}
	if after < 0 {
		return nil, newError(CodeValidation, "Event cursor must be a non-negative integer")
	}
	// The lapse channel before the check: a lapse that comes after the check closes it.
	var lapsed <-chan struct{}
	if r.cluster != nil {
		lapsed = r.cluster.Lapsed()
	}
	if err := r.vouch(); err != nil {
		return nil, err
	}
	h, err := r.locate(ctx, executionID)
	if err != nil {
		return nil, err
	}
	src, err := h.Follow()
	if err != nil {
		return nil, err
	}
	return &Subscription{src: src, cursor: after, lapsed: lapsed}, nil
}

// Follow is the in-process iterator built on Subscribe: every event after the cursor exactly
// once, in order, ending after the terminal event or when ctx ends (yielding ctx.Err()), or
// with UNAVAILABLE when this node can no longer vouch for its cluster lease (resume elsewhere).
func (r *Runtime) Follow(ctx context.Context, executionID string, after int64) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		sub, err := r.SubscribeContext(ctx, executionID, after)
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
