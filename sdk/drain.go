package sdk

import (
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// After the terminal event: a finished stream gives its connection back.
//
// net/http puts a connection back in its pool only when the answer's body was read to its end
// (EOF) before it was closed. A body closed early, as cancelling its request does, closes an
// HTTP/1.1 connection (HTTP/2 resets only the stream). The server ends an event stream right
// after the terminal event, but the very end (the chunked body's terminator, on TLS in a record
// of its own) is often not read yet when that event is: cutting the stream there cost a new
// connection, and a full TLS handshake, for most executions followed with StartExecution and
// Events.
//
// So after the terminal event the stream stops yielding but keeps its connection, and lets
// go-sse's Connection read on: Connect reads the body until it ends, closes it and returns
// (a message it still parses is dropped by onMessage: the stream is done). No other reader of
// the body is needed and go-sse stays the only SSE parser. The alternatives were worse: reading
// the body ourselves while go-sse's goroutine waits in a callback would compete with go-sse's
// buffered parser for the same body, and replacing the body in the ResponseValidator relies on
// go-sse reading that field only after validation, which it does not promise. What go-sse does
// promise is to read the body of the answer its HTTPClient returns, so the byte bound below
// sits in a RoundTripper of the stream's own (drainLimit). On HTTP/2 the same reading ends the
// stream cleanly instead of resetting it.
//
// The rest is read for at most drainWait and maxDrainBytes; past either the stream cuts the
// connection as before. A caller who stops the loop before the terminal event cuts it too: the
// stream could go on for hours. Stopping at the terminal event itself does not.

// drainWait bounds how long a stream is read after its terminal event. A harness-edge server
// ends the answer right after that event, so the end is normally on its way already; anything
// slower (a proxy holding the connection) costs this much, and the connection. A streamed start
// reads its trailer in this time too (start_stream.go).
const drainWait = 250 * time.Millisecond

// maxDrainBytes bounds what a stream reads after its terminal event: as much as net/http's
// server reads of a request body its handler left, to keep a connection (256 KiB). More than
// the terminator comes only when the terminal event came from the JSON replay while the stream
// lagged behind it.
const maxDrainBytes = 256 << 10

// errDrainTooLong cuts a stream that brings more than maxDrainBytes after its terminal event.
var errDrainTooLong = errors.New("harness: more than 256 KiB after the terminal event; closing the connection")

// drain ends the stream after its terminal event without cutting the connection: the rest of
// the answer is read (see above), and connect returns once go-sse's Connect has. With no
// connection open (the event came from the replay between connections) it is finish.
func (s *eventStream) drain() {
	if s.quiet == nil {
		s.finish()
		return
	}
	s.done = true
	s.draining.Store(true)
	s.quiet.Reset(drainWait) // checkQuiet then cuts the connection
}

// drainLimit is the transport of a stream's connection: it bounds what the answer's body
// brings once the stream drains.
type drainLimit struct {
	next     http.RoundTripper
	draining *atomic.Bool // the stream's: set on the iterating goroutine, read on go-sse's
}

func (t drainLimit) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &drainLimitedBody{body: resp.Body, draining: t.draining}
	return resp, nil
}

// drainLimitedBody fails the read that would go past maxDrainBytes after the stream began to
// drain; go-sse's Connect then returns and closes the body, which closes the connection.
type drainLimitedBody struct {
	body     io.ReadCloser
	draining *atomic.Bool
	drained  int // bytes read since the stream began to drain; only go-sse's goroutine reads
}

func (b *drainLimitedBody) Read(p []byte) (int, error) {
	if !b.draining.Load() {
		return b.body.Read(p)
	}
	left := maxDrainBytes - b.drained
	if left <= 0 {
		return 0, errDrainTooLong
	}
	n, err := b.body.Read(p[:min(len(p), left)])
	b.drained += n
	return n, err
}

func (b *drainLimitedBody) Close() error { return b.body.Close() }
