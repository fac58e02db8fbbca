package backend

import (
	"context"
	"errors"
	"iter"
	"sync"
	"sync/atomic"
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

// readLive returns up to limit published events after the cursor: from memory when they are
// still hot, else from the store (anything older than the hot window was committed long ago).
func (x *execution) readLive(after int64, limit int) ([]Event, error) {
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
	return x.rt.readStored(x.id, after, n)
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
// be called from any. What it reads comes from the execution's handle (Handle.Follow): the
// live execution, a stored log, or, on a shared store, a tail of another node's.
type Subscription struct {
	src      EventSource
	release  sync.Once
	cursor   int64
	finished bool        // the terminal event was returned, or the cursor reached the end of a complete log
	closed   atomic.Bool // Close may come from another goroutine (a disconnecting client)
}

// EventSource is what a Subscription reads: one execution's log, as far as it is committed.
type EventSource interface {
	// Ready is closed when Read at cursor has something to return: events after it, the end
	// of a complete log, or the runtime closing.
	Ready(cursor int64) <-chan struct{}
	// Read returns up to max events after cursor without blocking (max <= 0: all available)
	// and whether the log was complete before the read (its terminal event committed). Once
	// the runtime closed it fails with ErrClosed.
	Read(cursor int64, max int) (events []Event, complete bool, err error)
	// Exhausted reports, without reading, whether the log is complete and cursor is at or past
	// its end; false when the source cannot tell (it ends by itself).
	Exhausted(cursor int64) bool
	// AwaitingAction reports whether the execution waits for the response to an action.
	AwaitingAction() bool
	// Release hands the source back; called once, when the subscription ends.
	Release()
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
	h, err := r.locate(ctx, executionID)
	if err != nil {
		return nil, err
	}
	src, err := h.Follow()
	if err != nil {
		return nil, err
	}
	return &Subscription{src: src, cursor: after}, nil
}

// Ready is closed when Read has something to return (events after the cursor, or the end).
// Call Ready() before Read() to avoid a lost wake-up; it returns a fresh channel each time.
func (s *Subscription) Ready() <-chan struct{} {
	if s.closed.Load() || s.finished {
		return closedChan
	}
	return s.src.Ready(s.cursor)
}

// AwaitingAction reports whether the execution waits for the response to an action (an
// approval or an input): for a person, so possibly for hours. A stream uses it to stop holding
// per-request resources while it waits (proxy/events_detach.go).
func (s *Subscription) AwaitingAction() bool {
	if s.closed.Load() || s.finished {
		return false
	}
	return s.src.AwaitingAction()
}

// Exhausted reports, without reading, whether the execution is terminal and the cursor is at
// or past its last event: a stream from here would end with nothing in it. An execution another
// node is running (a cluster's tail) is never reported exhausted; its stream ends by itself.
func (s *Subscription) Exhausted() bool {
	if s.closed.Load() {
		return false
	}
	return s.finished || s.src.Exhausted(s.cursor)
}

// Read returns up to max events after the cursor without blocking and advances the cursor (max
// <= 0: all available). done is true once the terminal event has been returned by this
// subscription, or the execution is terminal and the cursor is at/after its last event.
func (s *Subscription) Read(max int) (events []Event, done bool, err error) {
	if s.closed.Load() || s.finished {
		return nil, true, nil
	}
	events, complete, err := s.src.Read(s.cursor, max)
	if errors.Is(err, ErrClosed) {
		return nil, true, err
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
	} else if complete {
		// The log was complete before the read, and the terminal event is published together
		// with the state: nothing after the cursor means the log is complete.
		s.finished = true
	}
	if s.finished {
		s.releaseSource()
	}
	return events, s.finished, nil
}

// Close ends the subscription; later Reads return done. Safe to call from any goroutine.
func (s *Subscription) Close() {
	s.closed.Store(true)
	s.releaseSource()
}

// releaseSource hands the source back, once (a cluster's tail stops with its last follower);
// its reads already taken stay valid.
func (s *Subscription) releaseSource() {
	s.release.Do(s.src.Release)
}

// storedLog is the EventSource of a terminal execution: its log, complete, up to lastSeq.
type storedLog struct {
	r       *Runtime
	id      string
	lastSeq int64
}

func (l storedLog) Ready(int64) <-chan struct{} { return closedChan }
func (l storedLog) Exhausted(cursor int64) bool { return cursor >= l.lastSeq }
func (l storedLog) AwaitingAction() bool        { return false }
func (l storedLog) Release()                    {}

func (l storedLog) Read(cursor int64, max int) ([]Event, bool, error) {
	if err := l.r.checkOpen(); err != nil {
		return nil, true, err
	}
	if cursor >= l.lastSeq {
		return nil, true, nil
	}
	n := int(l.lastSeq - cursor)
	if max > 0 && max < n {
		n = max
	}
	events, err := l.r.readStored(l.id, cursor, n)
	return events, true, err
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
