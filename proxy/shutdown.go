package proxy

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Ending streams at shutdown when their clients do not read.
//
// Shutdown closes h.shutdown, and a stream waiting for events ends at once. A stream blocked in a
// write to a client that stopped reading (full socket buffers) does not see that channel: its
// write only returns at its write deadline, StreamWriteTimeout (30 s by default) later, and the
// process cannot exit before. So Shutdown also interrupts the writes in flight: it sets a write
// deadline in the past on the connection itself, which makes a blocked write return at once
// (HTTP/1: the socket's deadline; HTTP/2: the stream is reset).
//
// The deadline is set on the innermost writer (the net/http connection's), not through the
// wrappers between: those are not safe to call from another goroutine (Caddy's idle-timeout
// writer keeps the handler's deadline in a plain field). A wrapper may put its own deadline back
// before its next chunk, so a write is interrupted again until it has returned. Writes that start
// after Shutdown need no help: the stream goroutine arms them itself with shutdownWriteTimeout.

// shutdownWriteTimeout bounds each write a stream makes once Shutdown was called: a backlog still
// goes out to a client that reads, and a client that does not is dropped after this long.
const shutdownWriteTimeout = time.Second

// interruptRetry is how often an interrupted write that has not returned yet is interrupted again.
const interruptRetry = 50 * time.Millisecond

// streamRegistry is the set of open streams, for Shutdown to interrupt, and for Caddy's
// Cleanup to wait for the detached ones (events_detach.go), which net/http no longer tracks.
type streamRegistry struct {
	mu       sync.Mutex
	streams  map[*stream]struct{}
	detached map[*stream]struct{}
}

// add registers s; remove must be called before the handler that serves s returns, because the
// connection's writer must not be used after that (unless s was detached: then when it ends).
func (sr *streamRegistry) add(s *stream) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if sr.streams == nil {
		sr.streams = make(map[*stream]struct{})
	}
	sr.streams[s] = struct{}{}
}

func (sr *streamRegistry) remove(s *stream) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	delete(sr.streams, s)
	delete(sr.detached, s)
}

// detach records that s now writes to conn, which it owns.
func (sr *streamRegistry) detach(s *stream, conn writeDeadliner) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if sr.detached == nil {
		sr.detached = make(map[*stream]struct{})
	}
	sr.detached[s] = struct{}{}
	s.conn = conn
}

// detachedCount is how many detached streams are open.
func (sr *streamRegistry) detachedCount() int {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	return len(sr.detached)
}

// writesInFlight returns, for each registered stream that is writing, the number of its write.
func (sr *streamRegistry) writesInFlight() map[*stream]uint64 {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	inFlight := make(map[*stream]uint64)
	for s := range sr.streams {
		if n := s.writes.Load(); n%2 == 1 {
			inFlight[s] = n
		}
	}
	return inFlight
}

// interrupt makes the writes of inFlight return, retrying each until the stream has moved past
// it (or ended). It returns when none is left.
func (sr *streamRegistry) interrupt(inFlight map[*stream]uint64) {
	for len(inFlight) > 0 {
		sr.mu.Lock()
		for s, n := range inFlight {
			_, open := sr.streams[s]
			if !open || s.writes.Load() != n {
				delete(inFlight, s)
				continue
			}
			_ = s.conn.SetWriteDeadline(time.Unix(1, 0)) // not every writer supports it; then the stream's own deadline applies
		}
		sr.mu.Unlock()
		if len(inFlight) > 0 {
			time.Sleep(interruptRetry)
		}
	}
}

// writeCounter numbers a stream's writes: odd while one is in flight, even between them.
type writeCounter struct{ atomic.Uint64 }

func (c *writeCounter) begin() { c.Add(1) }
func (c *writeCounter) end()   { c.Add(1) }

// connectionController sets the deadline of the writer at the bottom of w's Unwrap chain: the
// server's own, whose SetWriteDeadline may be called from any goroutine. net/http's writer sets
// deadlines itself and is used as is (a ResponseController would be an allocation per stream
// request); any other gets a ResponseController, which finds what it can.
func connectionController(w http.ResponseWriter) writeDeadliner {
	inner := innermostWriter(w)
	if d, ok := inner.(writeDeadliner); ok {
		return d
	}
	return http.NewResponseController(inner)
}
