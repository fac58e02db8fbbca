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

// streamEvents serves the SSE form of the events operation: the backlog after the cursor,
// then live events, one message per event (id = sequence, event = type, data = the stored
// event JSON). The stream ends after the terminal event, at once when the execution is
// finished and the cursor is at its end, when the client leaves, and on Shutdown.
//
// An unknown execution is answered with a JSON 404 before any SSE header is written.
func (h *Handler) streamEvents(w http.ResponseWriter, r *http.Request, executionID string, after int64) {
	sub, err := h.rt.SubscribeContext(r.Context(), executionID, after)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	defer sub.Close()

	// go-sse looks for FlushError, then Flush, then follows Unwrap, so this works behind
	// Caddy's wrapped writers, which are not http.Flushers.
	session, err := sse.Upgrade(w, r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if tw, ok := w.(*trackingWriter); ok {
		tw.wroteHeader = true // go-sse writes to the unwrapped writer from here on
	}
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-cache")
	// Tells nginx-style buffering proxies to pass each event through at once.
	hdr.Set("X-Accel-Buffering", "no")
	// The headers go out with the first batch of events, or on their own before the stream
	// first waits (see run): a client waiting for an approval must see the stream open, not a
	// request that hangs. go-sse sets the content type and flushes the headers alone on its
	// first Flush; the batch is written before that Flush, so the type is set here, as go-sse
	// would set it, and that Flush sends headers and batch in one write.
	hdr.Set("Content-Type", "text/event-stream")

	if obs := h.opts.Observer; obs != nil {
		obs.StreamOpened()
		defer obs.StreamClosed()
	}

	s := &stream{
		h:       h,
		session: session,
		w:       w,
		rc:      http.NewResponseController(w),
		conn:    connectionController(w),
		sub:     sub,
	}
	defer s.rc.SetWriteDeadline(time.Time{}) //nolint:errcheck // best effort; not every writer supports it
	h.streams.add(s)
	defer h.streams.remove(s)
	s.run(r)
}

// stream is one open SSE response.
type stream struct {
	h       *Handler
	session *sse.Session
	w       http.ResponseWriter // the same writer go-sse writes to, for whole batches of frames
	rc      *http.ResponseController
	// conn controls the connection's own writer, for Shutdown to interrupt a blocked write
	// from its goroutine (see shutdown.go).
	conn   *http.ResponseController
	writes writeCounter
	sub    *backend.Subscription
	// sentEvent is set once an event message went out; the retry hint rides on the first one.
	sentEvent bool
	// flushed is set once anything (the headers at least) was flushed to the client.
	flushed bool
	buf     bytes.Buffer // the frames of one batch, reused
	armedAt time.Time    // when the write deadline was last set
}

func (s *stream) run(r *http.Request) {
	heartbeat := time.NewTimer(s.h.opts.Heartbeat)
	defer heartbeat.Stop()
	for {
		// Ready before Read: an append between the two still closes this channel, so no
		// wake-up is lost.
		ready := s.sub.Ready()
		events, done, err := s.sub.Read(streamBatch)
		if err != nil {
			s.h.log.Error("harness: reading events for a stream", "path", r.URL.EscapedPath(), "err", err)
			return
		}
		if len(events) > 0 {
			if s.sendEvents(events) != nil {
				return
			}
			heartbeat.Reset(s.h.opts.Heartbeat)
		}
		if done || s.h.shuttingDown() {
			return
		}
		if len(events) == streamBatch {
			continue // more is probably waiting; Ready would say so anyway
		}
		if !s.flushed {
			// Nothing to send yet: the headers alone, before waiting. When events were ready
			// (a short execution streamed from its start), they went out with the headers in
			// one write.
			if s.flush() != nil {
				return
			}
		}
		select {
		case <-ready:
		case <-heartbeat.C:
			// Idle for a whole heartbeat interval: do not hold the frame buffer (about 1 KiB
			// after a first batch) while waiting, possibly for hours, for an approval.
			s.buf = bytes.Buffer{}
			if s.sendHeartbeat() != nil {
				return
			}
			heartbeat.Reset(s.h.opts.Heartbeat)
		case <-r.Context().Done():
			return
		case <-s.h.shutdown:
			return
		}
	}
}

// sendEvents writes a batch as one write and flushes it once (with the headers, if they were
// not sent yet). go-sse frames each message (id = sequence, event = type, retry on the first,
// data = the stored event JSON) into one reused buffer, so a subscriber costs one network write
// per batch rather than go-sse's five small writes per event, each of which would also reset
// Caddy's write deadline. The batch that ends the stream is flushed here too, under the write
// deadline: left to net/http's final flush (with the end of the chunked body, one write fewer)
// it would be written with no deadline at all.
func (s *stream) sendEvents(events []backend.Event) error {
	s.writes.begin()
	defer s.writes.end()
	s.armWriteDeadline()
	s.buf.Reset()
	for _, ev := range events {
		msg := sse.Message{
			ID:   sse.ID(strconv.FormatInt(ev.Sequence, 10)),
			Type: sse.Type(string(ev.Type)),
		}
		if !s.sentEvent {
			// Only on an event message: a block holding nothing but retry: is dispatched as an
			// empty event by some clients (go-sse's Connection among them).
			msg.Retry = s.h.opts.RetryHint
			s.sentEvent = true
		}
		// Stored event JSON is compact, so it is a single data line. It is also immutable and
		// shared by every reader (see backend.Event), so it is framed without a copy (one
		// allocation and copy per event and per subscriber less).
		msg.AppendData(unsafe.String(unsafe.SliceData(ev.JSON), len(ev.JSON)))
		if _, err := msg.WriteTo(&s.buf); err != nil {
			return err
		}
	}
	_, err := s.w.Write(s.buf.Bytes())
	if s.buf.Cap() > maxReusedFrameBuffer {
		s.buf = bytes.Buffer{} // a batch of huge events: do not keep its buffer for the life of the stream
	}
	if err != nil {
		return err
	}
	return s.flush()
}

// flush sends what was written (and the headers, the first time) to the client.
func (s *stream) flush() error {
	s.flushed = true
	return s.session.Flush()
}

// maxReusedFrameBuffer bounds the frame buffer a stream keeps between batches.
const maxReusedFrameBuffer = 256 << 10

func (s *stream) sendHeartbeat() error {
	s.writes.begin()
	defer s.writes.end()
	s.armWriteDeadline()
	var msg sse.Message
	msg.AppendComment(heartbeatComment)
	if err := s.session.Send(&msg); err != nil {
		return err
	}
	return s.flush()
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
