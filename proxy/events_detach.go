package proxy

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"time"
)

// Detaching idle HTTP/1 streams from net/http.
//
// A stream that waits (for an approval, possibly for hours) costs what net/http and Caddy hold
// for a request in flight: the handler's goroutine, whose stack grew to 16 KiB in Caddy's
// middleware chain, net/http's background reader (2 KiB of stack), the connection's bufio
// buffers and the request's and Caddy's state, about 33 KiB in all. So an HTTP/1.1 stream
// leaves net/http when it has nothing to send: at once when the execution waits for an action's
// response (a person's answer; streams opened together then never hold their requests' memory
// all at once), else after a whole heartbeat interval with nothing to send, after that
// heartbeat. It takes the connection (Hijack, on net/http's own writer at the bottom of Caddy's
// wrappers: Caddy's recorder would wrap the connection and keep itself, and through it the
// request and net/http's buffers, referenced), its handler returns, and the stream goes on, on
// a goroutine of its own that starts with a small stack, with the same loop (run): the same subscription
// wake-ups, heartbeat schedule, go-sse framing, write deadlines and Shutdown. What net/http did
// for the response body is done here with the standard library's chunked writer (the headers,
// with Transfer-Encoding: chunked, were sent before); the stream ends with the last chunk and
// the connection is closed: a hijacked connection cannot go back to net/http for keep-alive.
//
// A detached stream has no reader on its connection, so a client that leaves is noticed at the
// next heartbeat (a read that does not wait finds the end of the connection), or by a failed
// write, instead of at once. HTTP/2 and HTTP/3 streams cannot be hijacked and stay attached:
// they share their connection, and their cost is net/http's per stream, not per connection.
// HTTP/1.0 streams stay attached too: their body is not chunked; and so do streams whose
// response is encoded (Content-Encoding, e.g. Caddy's `encode`), which the connection would
// bypass. Other middleware that rewrites a response body is bypassed once a stream detaches.
//
// Caddy writes its access log line when the handler returns: for a detached stream that is
// at its first heartbeat, with status 200 and the bytes written so far.

// detachedConn is a detached stream's connection.
type detachedConn struct {
	conn net.Conn
	peek [1]byte // what clientLeft reads into
	// broken is set when a write failed: the chunked body may be cut inside a chunk, so it
	// must not be ended as if it were whole.
	broken bool
}

// detach takes the stream's connection from net/http and goes on serving the stream on a
// goroutine of its own. It returns false, and the stream stays attached, when the connection
// cannot be taken. It is tried once per stream.
func (s *stream) detach() bool {
	s.detachable = false
	if s.w.Header().Get("Content-Encoding") != "" {
		// A writer between us and net/http encodes the body (Caddy's `encode`, which matches
		// text/event-stream by default): writing to the connection would bypass it.
		return false
	}
	hj, ok := innermostWriter(s.w).(http.Hijacker)
	if !ok {
		return false
	}
	// Everything written so far was flushed (the heartbeat just was), so nothing is left in
	// net/http's buffers; Hijack clears the connection's deadlines. Bytes the client sent after
	// its request (a pipelined request, which an SSE client does not send) are dropped.
	conn, _, err := hj.Hijack()
	if err != nil {
		s.h.log.Debug("harness: an idle stream stays attached", "path", s.path, "err", err)
		return false
	}
	s.detached = &detachedConn{conn: conn}
	s.session, s.w = nil, nil
	s.rc = conn
	s.armedAt = time.Time{}
	s.h.streams.detach(s, conn)
	go s.serveDetached()
	return true
}

// serveDetached runs a detached stream to its end, then ends its chunked body and closes its
// connection.
func (s *stream) serveDetached() {
	defer s.endDetached()
	defer func() {
		// As net/http does for a handler: a panic ends this stream and its connection, not the
		// process.
		if rec := recover(); rec != nil {
			s.detached.broken = true
			s.h.log.Error("harness: panic serving a detached stream", "path", s.path, "panic", rec)
		}
	}()
	s.run(nil)
}

// endDetached writes the last chunk (unless the body is broken), closes the connection and
// releases the stream.
func (s *stream) endDetached() {
	d := s.detached
	if !d.broken {
		s.writes.begin()
		s.armWriteDeadline()
		_ = d.write(endOfChunkedBody())
		s.writes.end()
	}
	_ = d.conn.Close()
	s.close()
}

// writeChunk writes p as one chunk of the response body, in one write.
func (d *detachedConn) writeChunk(p []byte) error {
	if len(p) == 0 {
		return nil // an empty chunk would end the body
	}
	wire := bytes.NewBuffer(make([]byte, 0, len(p)+16))
	cw := httputil.NewChunkedWriter(wire)
	if _, err := cw.Write(p); err != nil {
		return err
	}
	return d.write(wire.Bytes())
}

func (d *detachedConn) write(p []byte) error {
	_, err := d.conn.Write(p)
	if err != nil {
		d.broken = true
	}
	return err
}

// endOfChunkedBody is the last chunk and the empty trailer section that end a chunked body, as
// net/http writes them at the end of a response without trailers.
func endOfChunkedBody() []byte {
	var wire bytes.Buffer
	_ = httputil.NewChunkedWriter(&wire).Close() // the last chunk, "0\r\n"
	wire.WriteString("\r\n")                     // no trailers
	return wire.Bytes()
}

// clientLeft reports whether the client closed the connection, with a read that does not wait.
// Whatever the client sent is dropped (an SSE client sends nothing once it made its request).
func (d *detachedConn) clientLeft() bool {
	// Not a deadline already past: Read would fail on it before looking at the socket. So a
	// client that is there and silent holds the stream's goroutine this long, once per heartbeat.
	if err := d.conn.SetReadDeadline(time.Now().Add(clientCheckWait)); err != nil {
		return false
	}
	_, err := d.conn.Read(d.peek[:])
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

// clientCheckWait is how long clientLeft's read waits for the end of the connection.
const clientCheckWait = 5 * time.Millisecond

// innermostWriter is the writer at the bottom of w's Unwrap chain: net/http's own.
func innermostWriter(w http.ResponseWriter) http.ResponseWriter {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}
