package backend

import (
	"errors"
	"sync"
	"sync/atomic"
)

// closedChan is returned by Ready when Read has something to return right away.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

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
	// lapsed is closed when this node can no longer vouch for its cluster lease (Cluster.Lapsed,
	// taken when the subscription started; nil on a single node): the subscription ends.
	lapsed <-chan struct{}
}

// Lapsed is closed when the subscription must end before its log does, because this node can
// no longer vouch for its cluster lease: what it reads may no longer be the cluster's truth,
// and another node may be claiming this one (backend/cluster/vouch.go). Read then reports
// UNAVAILABLE and the client resumes from its cursor on another node. A waiter selects on it
// beside Ready. Nil (never closed) on a single node.
func (s *Subscription) Lapsed() <-chan struct{} { return s.lapsed }

// hasLapsed reports whether the lease lapsed since the subscription started.
func (s *Subscription) hasLapsed() bool {
	select {
	case <-s.lapsed:
		return true
	default:
		return false
	}
}

// Ready is closed when Read has something to return (events after the cursor, or the end).
// Call Ready() before Read() to avoid a lost wake-up; it returns a fresh channel each time.
func (s *Subscription) Ready() <-chan struct{} {
	if s.closed.Load() || s.finished || s.hasLapsed() {
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
// subscription, or the execution is terminal and the cursor is at/after its last event. Once
// Lapsed is closed it reports UNAVAILABLE (done, without the terminal event).
func (s *Subscription) Read(max int) (events []Event, done bool, err error) {
	if s.closed.Load() || s.finished {
		return nil, true, nil
	}
	if s.hasLapsed() {
		s.releaseSource()
		return nil, true, errLeaseUnsure
	}
	events, complete, err := s.src.Read(s.cursor, max)
	if errors.Is(err, ErrClosed) || errors.Is(err, errLeaseUnsure) { // the runtime closed, or another node claimed the execution
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
