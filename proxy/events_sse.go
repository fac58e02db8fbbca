package proxy

import (
	"bytes"
	"net/http"
	"strconv"
	"time"
	"unsafe"

	sse "github.com/tmaxmax/go-sse"

	"github.com/harness-edge/harness-edge/backend"
)

// streamBatch is how many events one Read takes; a batch is flushed as one write.
const streamBatch = 256

// heartbeatComment is the text of the idle-stream comment (": keep-alive").
const heartbeatComment = "keep-alive"

// heartbeatHeader is the harness-edge extension header of every event stream (the events
// operation and the streamed start): the heartbeat interval in milliseconds. The Go SDK presumes
// a stream dead after three intervals without a byte.
const heartbeatHeader = "Harness-Heartbeat-Ms"

// streamEvents serves the SSE form of the events operation: the backlog after the cursor,
// then live events, one message per event (id = sequence, event = type, data = the stored
// event JSON). The stream ends after the terminal event, at once when the execution is
// finished and the cursor is at its end, when the client leaves, on Shutdown, and when this
// node can no longer vouch for its cluster lease (backend.Stream.Lapsed; a new stream is then
// refused with 503 UNAVAILABLE): clients resume from their cursor on another node.
//
// An unknown execution is answered with a JSON 404 before any SSE header is written.
//
// A reconnect (Last-Event-ID) to an execution that is terminal, with the cursor at or past its
// last event, is answered 204 No Content: by the WHATWG rules for EventSource that is the one
// answer after which a client stops reconnecting. An empty 200 would make every open browser
// tab, npm eventsource and go-sse client reconnect every retry interval, forever.
func (h *Handler) streamEvents(w http.ResponseWriter, r *http.Request, executionID string, after int64, reconnect bool) {
	st, err := h.rt.OpenStream(r.Context(), backend.StreamRequest{ExecutionID: executionID, After: after})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if reconnect && st.Exhausted() {
		st.Close()
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusNoContent)
		return
	}

	h.serveStream(w, r, streamFeed{st, &h.frames})
}

// serveStream answers an SSE request with feed's events, from the headers to the end of the
// stream (the events operation, and the conversation and tenant streams, streams.go).
func (h *Handler) serveStream(w http.ResponseWriter, r *http.Request, feed eventFeed) {
	sub := feed
	// go-sse looks for FlushError, then Flush, then follows Unwrap, so this works behind
	// Caddy's wrapped writers, which are not http.Flushers.
	session, err := sse.Upgrade(w, r)
	if err != nil {
		sub.Close()
		h.writeError(w, r, err)
		return
	}
	if tw, ok := w.(*trackingWriter); ok {
		tw.wroteHeader = true // go-sse writes to the unwrapped writer from here on
	}
	hdr := w.Header()
	// Cache-Control and X-Accel-Buffering tell caches and nginx-style buffering proxies to pass
	// each event through at once. The heartbeat header tells clients how often an idle stream
	// carries a heartbeat, so that they can tell a dead connection from a quiet one without
	// being configured (docs/protocol.md).
	//
	// The headers go out with the first batch of events, or on their own before the stream
	// first waits (see run): a client waiting for an approval must see the stream open, not a
	// request that hangs. go-sse sets the content type and flushes the headers alone on its
	// first Flush; the batch is written before that Flush, so the type is set here, as go-sse
	// would set it, and that Flush sends headers and batch in one write.
	if h.heartbeatMs != "" {
		setHeaders(hdr, "Cache-Control", "no-cache", "X-Accel-Buffering", "no", heartbeatHeader, h.heartbeatMs, "Content-Type", "text/event-stream")
	} else {
		setHeaders(hdr, "Cache-Control", "no-cache", "X-Accel-Buffering", "no", "Content-Type", "text/event-stream")
	}

	if obs := h.opts.Observer; obs != nil {
		obs.StreamOpened()
	}
	s := &stream{
		h:       h,
		path:    r.URL.EscapedPath(),
		session: session,
		w:       w,
		rc:      http.NewResponseController(w),
		conn:    connectionController(w),
		sub:     sub,
		// HTTP/1.1 only: its body is chunked, which a detached stream carries on (HTTP/1.0 has
		// no chunking; HTTP/2 and /3 connections cannot be taken over).
		detachable: h.opts.DetachIdleStreams && r.ProtoMajor == 1 && r.ProtoMinor >= 1,
	}
	h.streams.add(s)
	detached := false
	defer func() {
		if !detached { // else the stream goes on, on its own goroutine, which ends it (events_detach.go)
			_ = s.rc.SetWriteDeadline(time.Time{}) // best effort; not every writer supports it
			s.close()
		}
	}()
	detached = s.run(r.Context().Done())
	if !detached && s.readErr != nil && !s.flushed {
		// Nothing was sent yet, not even the headers: the client gets the Problem, as for any
		// other request (a damaged stored event answers 500 INTERNAL_ERROR here).
		for _, k := range []string{"Content-Type", "Cache-Control", "X-Accel-Buffering"} {
			hdr.Del(k)
		}
		h.writeError(w, r, s.readErr)
	}
}

// close releases what an ended stream holds. An attached stream must call it before its
// handler returns: the connection's writer must not be used after that.
func (s *stream) close() {
	s.releaseFrameBuffer()
	s.h.streams.remove(s)
	s.sub.Close()
	if obs := s.h.opts.Observer; obs != nil {
		obs.StreamClosed()
	}
}

// stream is one open SSE response.
type stream struct {
	h    *Handler
	path string // the request's, for logs
	// session and w are go-sse's session and the handler's writer, w the same writer go-sse
	// writes to, for whole batches of frames; both are nil once the stream is detached.
	session *sse.Session
	w       http.ResponseWriter
	// rc sets the deadline of the stream's next write: the handler's writer's, or once detached
	// the connection's.
	rc writeDeadliner
	// conn controls the connection's own writer, for Shutdown to interrupt a blocked write
	// from its goroutine (see shutdown.go). Swapped under the registry's lock when detaching.
	conn   writeDeadliner
	writes writeCounter
	sub    eventFeed
	// sentEvent is set once an event message went out; the retry hint rides on the first one.
	sentEvent bool
	// flushed is set once anything (the headers at least) was flushed to the client.
	flushed bool
	// readErr ended the stream: the runtime could not read its events. Before anything was
	// flushed the handler answers it as a Problem; after, the stream just ends (logged).
	readErr error
	buf     bytes.Buffer // the frames of one batch, reused
	armedAt time.Time    // when the write deadline was last set
	// detachable: an HTTP/1.1 stream not detached yet; detached: the connection, once the
	// stream left net/http (events_detach.go).
	detachable bool
	detached   *detachedConn
}

// writeDeadliner is what both an http.ResponseController and a net.Conn offer.
type writeDeadliner interface {
	SetWriteDeadline(time.Time) error
}

// run writes the stream until it ends, or until it detaches from net/http, which it reports
// (the caller must then leave the stream alone: its own goroutine ends it). clientGone is
// closed when the client leaves (the request's context); nil once detached, where a client that
// left is noticed at the next heartbeat (events_detach.go).
func (s *stream) run(clientGone <-chan struct{}) (detached bool) {
	// The heartbeat timer is made when the stream first waits: most streams (a finished
	// execution, a short one streamed from its start) end with their first batch and never do.
	var heartbeat *time.Timer
	defer func() {
		if heartbeat != nil {
			heartbeat.Stop()
		}
	}()
	for {
		// Ready before Read: an append between the two still closes this channel, so no
		// wake-up is lost.
		ready := s.sub.Ready()
		events, done, err := s.sub.Read(streamBatch)
		if err != nil {
			s.readErr = err
			// The stream is open: it ends here, at a message boundary and without its terminal
			// event, and a client that resumes from its cursor gets the error as a Problem
			// (streamEvents) or, elsewhere, the rest of the log. An expected end (UNAVAILABLE:
			// this node can no longer vouch for its cluster lease, or another node claimed the
			// execution) is not a failure of this stream: the runtime logs its cause once, not
			// once per stream.
			if _, expected := problemOf(err); s.flushed && !expected {
				s.h.logFailure("harness: reading events for a stream", err, "path", s.path)
			}
			return false
		}
		if len(events) > 0 {
			if s.sendEvents(events, done) != nil {
				return false
			}
			if heartbeat != nil {
				heartbeat.Reset(s.h.opts.Heartbeat)
			}
		}
		if done || s.h.shuttingDown() {
			return false
		}
		if len(events) == streamBatch {
			continue // more is probably waiting; Ready would say so anyway
		}
		if !s.flushed {
			// Nothing to send yet: the headers alone, before waiting. When events were ready
			// (a short execution streamed from its start), they went out with the headers in
			// one write.
			if s.flush() != nil {
				return false
			}
		}
		if s.detachable && s.sub.AwaitingAction() && s.detach() {
			// Waiting for a person's answer: the stream leaves net/http at once rather than
			// after a heartbeat interval, so that streams opened together never hold their
			// requests' memory all at once (events_detach.go).
			return true
		}
		if heartbeat == nil {
			heartbeat = time.NewTimer(s.h.opts.Heartbeat)
		}
		select {
		case <-ready:
		case <-s.sub.Lapsed(): // this node can no longer vouch for its lease: Read ends the stream
		case <-heartbeat.C:
			// Idle for a whole heartbeat interval: do not hold the frame buffer (about 1 KiB
			// after a first batch) while waiting, possibly for hours, for an approval.
			s.releaseFrameBuffer()
			if s.detached != nil && s.detached.clientLeft() {
				return false
			}
			if s.sendHeartbeat() != nil {
				return false
			}
			if s.detachable && s.detach() {
				return true
			}
			heartbeat.Reset(s.h.opts.Heartbeat)
		case <-clientGone:
			return false
		case <-s.h.shutdown:
			return false
		}
	}
}

// eventMessage is ev as one SSE message: its id, its type, and its stored JSON as the data.
// Stored event JSON is compact, so it is a single data line. It is also immutable and shared by
// every reader (see backend.Event), so it is framed without a copy (one allocation and copy per
// event and per subscriber less).
func eventMessage(id sse.EventID, ev backend.Event) sse.Message {
	msg := sse.Message{ID: id, Type: sse.Type(string(ev.Type))}
	msg.AppendData(unsafe.String(unsafe.SliceData(ev.JSON), len(ev.JSON)))
	return msg
}

// sendEvents writes a batch as one write and flushes it once (with the headers, if they were
// not sent yet). go-sse frames each message (id = sequence, event = type, retry on the first,
// data = the stored event JSON) into one reused buffer, so a subscriber costs one network write
// per batch rather than go-sse's five small writes per event, each of which would also reset
// Caddy's write deadline. The batch that ends the stream is flushed here too, under the write
// deadline and where Shutdown can interrupt it: left to net/http's final flush it would be
// neither. last reports that the batch ends the stream (see wholeStream).
func (s *stream) sendEvents(events []backend.Event, last bool) error {
	s.writes.begin()
	defer s.writes.end()
	s.armWriteDeadline()
	s.takeFrameBuffer()
	for i, ev := range events {
		if s.sentEvent {
			if frame := s.sub.sharedFrame(i, ev); frame != nil {
				s.buf.Write(frame)
				continue
			}
		}
		msg := eventMessage(s.sub.eventID(i, ev), ev)
		if !s.sentEvent {
			// Only on an event message: a block holding nothing but retry: is dispatched as an
			// empty event by some clients (go-sse's Connection among them).
			msg.Retry = s.h.opts.RetryHint
			s.sentEvent = true
		}
		if _, err := msg.WriteTo(&s.buf); err != nil {
			return err
		}
	}
	if last && !s.flushed {
		s.wholeStream()
	}
	err := s.writeFrames()
	if s.buf.Cap() > maxReusedFrameBuffer {
		s.buf = bytes.Buffer{} // a batch of huge events: do not keep its buffer for the life of the stream
	}
	return err
}

// wholeStream is called when the frames in s.buf are the whole stream (its first batch ends
// it: a finished execution, or a short one whose events were all committed when the stream
// opened — what a client that starts and then streams almost always finds). The body is then
// sent with a Content-Length instead of chunked, so headers and events leave in one write and
// nothing follows: chunked, net/http ends the body with a write of its own after the handler
// returns (the last chunk, "0\r\n\r\n"). The bytes of the stream are the same; a client reads
// them to the end of the body, as it reads a chunked one. A response that declared trailers
// (the streamed start's final snapshot) stays chunked: only a chunked body carries trailers.
// So does a detached stream, which writes its own chunks (it has sent its first batch anyway).
func (s *stream) wholeStream() {
	if s.detached != nil {
		return
	}
	hdr := s.w.Header()
	if _, trailers := hdr["Trailer"]; trailers {
		return
	}
	hdr["Content-Length"] = []string{strconv.Itoa(s.buf.Len())}
}

// writeFrames sends the frames in s.buf to the client at once (with the headers, if they were
// not sent yet).
func (s *stream) writeFrames() error {
	if s.detached != nil {
		return s.detached.writeChunk(s.buf.Bytes())
	}
	if _, err := s.w.Write(s.buf.Bytes()); err != nil {
		return err
	}
	return s.flush()
}

// flush sends what was written (and the headers, the first time) to the client.
func (s *stream) flush() error {
	s.flushed = true
	if s.detached != nil {
		return nil // a detached stream writes straight to its connection
	}
	return s.session.Flush()
}

func (s *stream) sendHeartbeat() error {
	s.writes.begin()
	defer s.writes.end()
	s.armWriteDeadline()
	var msg sse.Message
	msg.AppendComment(heartbeatComment)
	s.buf.Reset()
	if _, err := msg.WriteTo(&s.buf); err != nil {
		return err
	}
	err := s.writeFrames()
	s.buf = bytes.Buffer{} // idle: hold no frame buffer while waiting
	return err
}

// armWriteDeadline bounds the next write, so a client that stops reading cannot pin the
// stream (and delay Shutdown) forever. Writers that cannot set deadlines are left alone.
// Setting a deadline costs a timer update in the runtime's poller, so it is re-armed only once
// a quarter of StreamWriteTimeout has passed: a write that blocks still fails after between
// three quarters of StreamWriteTimeout and all of it. Once Shutdown was called, every write gets
// the short shutdownWriteTimeout instead, so a client that does not read cannot hold the process.
func (s *stream) armWriteDeadline() {
	now := time.Now()
	if s.h.shuttingDown() {
		s.armedAt = time.Time{}
		_ = s.rc.SetWriteDeadline(now.Add(shutdownWriteTimeout))
		return
	}
	timeout := s.h.opts.StreamWriteTimeout
	if !s.armedAt.IsZero() && now.Sub(s.armedAt) < timeout/4 {
		return
	}
	s.armedAt = now
	_ = s.rc.SetWriteDeadline(now.Add(timeout))
}
