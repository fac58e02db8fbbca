package proxy

import (
	"bytes"
	"net/http"
	"strconv"
	"time"

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
	sub, err := h.rt.Subscribe(executionID, after)
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
	// Flush the headers now, before any event is ready: a client waiting for an approval must
	// see the stream open, not a request that hangs.
	if session.Flush() != nil {
		return
	}

	if obs := h.opts.Observer; obs != nil {
		obs.StreamOpened()
		defer obs.StreamClosed()
	}

	s := stream{
		h:       h,
		session: session,
		w:       w,
		rc:      http.NewResponseController(w),
		sub:     sub,
	}
	defer s.rc.SetWriteDeadline(time.Time{}) //nolint:errcheck // best effort; not every writer supports it
	s.run(r)
}

// stream is one open SSE response.
type stream struct {
	h       *Handler
	session *sse.Session
	w       http.ResponseWriter // the same writer go-sse writes to, for whole batches of frames
	rc      *http.ResponseController
	sub     *backend.Subscription
	// sentEvent is set once an event message went out; the retry hint rides on the first one.
	sentEvent bool
	buf       []byte    // the frames of one batch, reused
	armedAt   time.Time // when the write deadline was last set
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
		select {
		case <-ready:
		case <-heartbeat.C:
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

// sendEvents writes a batch as one write and flushes it once. The frames are exactly what
// go-sse's Message would write (id, event, retry on the first, data, blank line; see
// appendEventFrame), built in one reused buffer: per event and subscriber, go-sse's message
// costs a copy of the data and five small writes, each of which resets Caddy's write deadline.
func (s *stream) sendEvents(events []backend.Event) error {
	s.armWriteDeadline()
	buf := s.buf[:0]
	for _, ev := range events {
		var retry time.Duration
		if !s.sentEvent {
			// Only on an event message: a block holding nothing but retry: is dispatched as an
			// empty event by some clients (go-sse's Connection among them).
			retry = s.h.opts.RetryHint
			s.sentEvent = true
		}
		buf = appendEventFrame(buf, ev, retry)
	}
	_, err := s.w.Write(buf)
	if cap(buf) <= maxReusedFrameBuffer {
		s.buf = buf
	} else {
		s.buf = nil // a batch of huge events: do not keep its buffer for the life of the stream
	}
	if err != nil {
		return err
	}
	return s.session.Flush()
}

// maxReusedFrameBuffer bounds the frame buffer a stream keeps between batches.
const maxReusedFrameBuffer = 256 << 10

// appendEventFrame appends the SSE message of one event: id = sequence, event = type, the retry
// hint when retry > 0, data = the stored event JSON. Stored JSON is compact, so it is one data
// line; should it ever hold a line break, go-sse's Message splits it into data lines as the
// format requires.
func appendEventFrame(buf []byte, ev backend.Event, retry time.Duration) []byte {
	if bytes.ContainsAny(ev.JSON, "\r\n") {
		msg := sse.Message{ID: sse.ID(strconv.FormatInt(ev.Sequence, 10)), Type: sse.Type(string(ev.Type)), Retry: retry}
		msg.AppendData(string(ev.JSON))
		text, _ := msg.MarshalText() // writes to a bytes.Buffer: never fails
		return append(buf, text...)
	}
	buf = append(buf, "id: "...)
	buf = strconv.AppendInt(buf, ev.Sequence, 10)
	buf = append(buf, "\nevent: "...)
	buf = append(buf, ev.Type...)
	buf = append(buf, '\n')
	if ms := retry.Milliseconds(); ms > 0 {
		buf = append(buf, "retry: "...)
		buf = strconv.AppendInt(buf, ms, 10)
		buf = append(buf, '\n')
	}
	buf = append(buf, "data: "...)
	buf = append(buf, ev.JSON...)
	return append(buf, "\n\n"...)
}

func (s *stream) sendHeartbeat() error {
	s.armWriteDeadline()
	var msg sse.Message
	msg.AppendComment(heartbeatComment)
	if err := s.session.Send(&msg); err != nil {
		return err
	}
	return s.session.Flush()
}

// armWriteDeadline bounds the next write, so a client that stops reading cannot pin the
// stream (and delay Shutdown) forever. Writers that cannot set deadlines are left alone.
// Setting a deadline costs a timer update in the runtime's poller, so it is re-armed only once
// a quarter of StreamWriteTimeout has passed: a write that blocks still fails after between
// three quarters of StreamWriteTimeout and all of it.
func (s *stream) armWriteDeadline() {
	now := time.Now()
	timeout := s.h.opts.StreamWriteTimeout
	if !s.armedAt.IsZero() && now.Sub(s.armedAt) < timeout/4 {
		return
	}
	s.armedAt = now
	_ = s.rc.SetWriteDeadline(now.Add(timeout))
}
