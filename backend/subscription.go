package backend

import (
	"context"
	"errors"
	"iter"
	"sync"
	"sync/atomic"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// closedChan is returned by Ready when Read has something to return right away.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

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
	events, err := h.events(ctx, after, limit)
	if err != nil {
		return nil, after, err
	}
	next := after
	if len(events) > 0 {
		next = events[len(events)-1].Sequence
	}
	return events, next, nil
}

// readLive returns up to limit published events after the cursor: from memory when they are
// still hot, else from the store (anything older than the hot window was committed long ago).
func (r *Runtime) readLive(x *execution, after int64, limit int) ([]Event, error) {
	x.mu.RLock()
	last, hotStart := x.lastSeq, x.hotStart
	if after >= last {
		x.mu.RUnlock()
		return nil, nil
	}
	if after+1 >= hotStart {
		from := int(after + 1 - hotStart)
		to := len(x.hot)
		if limit > 0 && from+limit < to {
			to = from + limit
		}
		// The events' JSON is immutable and shared; only the slice header is copied.
		events := append([]Event(nil), x.hot[from:to]...)
		x.mu.RUnlock()
		return events, nil
	}
	x.mu.RUnlock()
	// Only up to what was published: the store may already hold a commit still being published.
	n := int(last - after)
	if limit > 0 && limit < n {
		n = limit
	}
	return r.readStored(x.id, after, n)
}

func (r *Runtime) readStored(executionID string, after int64, limit int) ([]Event, error) {
	if l, ok := r.finishedLogs.get(executionID); ok {
		return l.after(after, limit), nil
	}
	events, err := r.store.Events(executionID, after, limit)
	if err != nil {
		return nil, r.readError(DamagedEvent, executionID, "read events", err)
	}
	return events, nil
}

// Subscription follows one execution's events from a cursor: replay, then live events, up to
// the terminal one, each exactly once and in order. It holds no goroutine: the caller waits on
// Ready and drains with Read. Ready and Read are meant for one goroutine at a time; Close may
// be called from any.
type Subscription struct {
	rt          *Runtime
	executionID string
	x           *execution // nil when the execution was already terminal at Subscribe
	// tail, on a shared store, follows an execution another node runs (cluster_tail.go);
	// releaseTail hands it back, once.
	tail        *remoteTail
	releaseTail sync.Once
	lastSeq     int64 // for a terminal execution (x == nil, tail == nil): its last sequence
	cursor      int64
	finished    bool        // the terminal event was returned, or the cursor reached the end of a terminal log
	closed      atomic.Bool // Close may come from another goroutine (a disconnecting client)
}

// Subscribe positions a subscription after the cursor, as the anonymous tenant. NOT_FOUND if
// unknown.
func (r *Runtime) Subscribe(executionID string, after int64) (*Subscription, error) {
	return r.SubscribeContext(context.Background(), executionID, after)
}

// SubscribeContext positions a subscription after the cursor, as ctx's tenant (see WithTenant);
// ctx only names the tenant and does not bound the subscription. NOT_FOUND if unknown or
// another tenant's.
func (r *Runtime) SubscribeContext(ctx context.Context, executionID string, after int64) (*Subscription, error) {
	if err := r.checkOpen(); err != nil {
		return nil, err
	}
	if after < 0 {
		return nil, newError(CodeValidation, "Event cursor must be a non-negative integer")
	}
	s := &Subscription{rt: r, executionID: executionID, cursor: after}
	h, err := r.locate(ctx, executionID)
	if err != nil {
		return nil, err
	}
	if err := h.follow(s); err != nil {
		return nil, err
	}
	return s, nil
}

// Ready is closed when Read has something to return (events after the cursor, or the end).
// Call Ready() before Read() to avoid a lost wake-up; it returns a fresh channel each time.
func (s *Subscription) Ready() <-chan struct{} {
	if s.closed.Load() || s.finished {
		return closedChan
	}
	if s.tail != nil {
		return s.tail.ready(s.cursor)
	}
	if s.x == nil {
		return closedChan
	}
	x := s.x
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed || s.cursor < x.lastSeq || isTerminalState(x.rec.Execution.State) {
		return closedChan
	}
	return x.changed
}

// AwaitingAction reports whether the execution waits for the response to an action (an
// approval or an input): for a person, so possibly for hours. A stream uses it to stop holding
// per-request resources while it waits (proxy/events_detach.go).
func (s *Subscription) AwaitingAction() bool {
	if s.closed.Load() || s.finished || s.x == nil {
		return false
	}
	x := s.x
	x.mu.RLock()
	defer x.mu.RUnlock()
	state := x.rec.Execution.State
	return state == api.ExecutionStateAwaitingApproval || state == api.ExecutionStateAwaitingInput
}

// Exhausted reports, without reading, whether the execution is terminal and the cursor is at
// or past its last event: a stream from here would end with nothing in it. An execution another
// node is running (a cluster's tail) is never reported exhausted; its stream ends by itself.
func (s *Subscription) Exhausted() bool {
	if s.closed.Load() || s.tail != nil {
		return false
	}
	if s.finished {
		return true
	}
	if s.x == nil {
		return s.cursor >= s.lastSeq
	}
	s.x.mu.RLock()
	defer s.x.mu.RUnlock()
	return !s.x.closed && isTerminalState(s.x.rec.Execution.State) && s.cursor >= s.x.lastSeq
}

// Read returns up to max events after the cursor without blocking and advances the cursor (max
// <= 0: all available). done is true once the terminal event has been returned by this
// subscription, or the execution is terminal and the cursor is at/after its last event.
func (s *Subscription) Read(max int) (events []Event, done bool, err error) {
	if s.closed.Load() || s.finished {
		return nil, true, nil
	}
	var terminal bool
	if s.tail != nil {
		events, terminal, err = s.tail.read(s.cursor, max)
		if errors.Is(err, ErrClosed) {
			return nil, true, err
		}
	} else if s.x == nil {
		if err := s.rt.checkOpen(); err != nil {
			return nil, true, err
		}
		terminal = true
		if s.cursor < s.lastSeq {
			n := int(s.lastSeq - s.cursor)
			if max > 0 && max < n {
				n = max
			}
			events, err = s.rt.readStored(s.executionID, s.cursor, n)
		}
	} else {
		s.x.mu.RLock()
		closed := s.x.closed
		terminal = isTerminalState(s.x.rec.Execution.State)
		s.x.mu.RUnlock()
		if closed {
			return nil, true, ErrClosed
		}
		events, err = s.rt.readLive(s.x, s.cursor, max)
	}
	if err != nil {
		return nil, false, err
	}
	if len(events) > 0 {
		last := events[len(events)-1]
		s.cursor = last.Sequence
		if last.Terminal() {
			s.finished = true
		}
	} else if terminal {
		// The state was terminal before the read, and the terminal event is published together
		// with the state: nothing after the cursor means the log is complete.
		s.finished = true
	}
	if s.finished {
		s.dropTail()
	}
	return events, s.finished, nil
}

// Close ends the subscription; later Reads return done. Safe to call from any goroutine.
func (s *Subscription) Close() {
	s.closed.Store(true)
	s.dropTail()
}

// dropTail hands the subscription's remote tail back (the last one stops it); its reads
// already taken stay valid.
func (s *Subscription) dropTail() {
	if s.tail != nil {
		s.releaseTail.Do(func() { s.rt.releaseTail(s.tail) })
	}
}

// Follow is the in-process iterator built on Subscribe: every event after the cursor exactly
// once, in order, ending after the terminal event or when ctx ends (yielding ctx.Err()).
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
			case <-ctx.Done():
				yield(Event{}, ctx.Err())
				return
			}
		}
	}
}
