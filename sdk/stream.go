package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	sse "github.com/tmaxmax/go-sse"
	"go.opentelemetry.io/otel/attribute"

	"github.com/harness-edge/harness-edge/sdk/api"
)

const (
	// maxEventBytes bounds one SSE message. The server caps an event's data at 1 MiB by
	// default; the envelope and JSON escaping need room beyond that.
	maxEventBytes = 4 << 20
	// replayPageSize is the page size of the JSON replay that fills gaps.
	replayPageSize = 1000
	// firstReconnectWait is the wait before reconnecting a stream that was cut after it brought
	// events or lived for a heartbeat interval, less up to half at random so that the clients
	// of a restarted server spread out. Such a cut is most often the server ending its streams
	// on a reload or shutdown, or a proxy's limit, and the cursor makes the reconnect cheap, so
	// it should be quick; attempts that bring nothing back off by the RetryPolicy (MinWait·2^n,
	// Retry-After followed).
	firstReconnectWait = 100 * time.Millisecond
)

// errStreamEnded is what the response validator reports for 204 No Content, the SSE way of
// saying "nothing more, do not reconnect".
var errStreamEnded = errors.New("harness: the server ended the event stream (204)")

// errNotAnEventStream is what the response validator reports for a 200 that is not
// text/event-stream: something other than the server answered, and reconnecting will not help.
var errNotAnEventStream = errors.New("not an event stream")

// Events streams the events of an execution whose sequence is greater than after (0 for all of
// them), each exactly once and in sequence order, and ends after the terminal event
// (run.completed, run.failed or run.cancelled). With after at or past the end of a finished
// execution it ends without yielding.
//
// The network stays out of sight:
//   - When the stream drops, or the server answers 5xx, 408 or 429, it reconnects with backoff
//     and resumes from the last sequence it yielded (Last-Event-ID and after).
//   - A stream that stays open but brings no byte, neither event nor heartbeat, for three
//     heartbeat intervals (the server's announced interval, else 15 s) is presumed dead,
//     dropped and reconnected.
//   - Events delivered twice, across reconnects or within one stream, are dropped by
//     (executionId, sequence).
//   - A gap in the sequence is filled from the JSON replay (ListEvents), and so is a gap
//     nothing reveals: when the stream brings heartbeats but no new event for a heartbeat
//     interval, the replay is asked whether events were lost on the way.
//
// See WithHeartbeatInterval for the intervals. Events keeps reconnecting for as long as ctx
// lives, like a browser's EventSource: give ctx a deadline, or use WithReconnectTimeout to end
// it with ErrNoProgress after a time without progress.
//
// An error ends the sequence: ctx's error when ctx ends, an error wrapping ErrNoProgress, an
// *Error for an answer that retrying cannot fix (ErrNotFound for an unknown execution), or a
// protocol violation. Stopping the loop early closes the connection; it never affects the
// execution.
//
// After the terminal event the connection is read to its end before the sequence ends (at most
// 250 ms and 256 KiB, normally the few bytes already on their way), so that it goes back to
// the HTTP client's pool for the next request instead of being closed: let the loop run to its
// end, or stop it at the terminal event, and the connection is reused. Stopping it before the
// terminal event closes the connection.
func (c *Client) Events(ctx context.Context, executionID string, after int64) iter.Seq2[api.RuntimeEvent, error] {
	return func(yield func(api.RuntimeEvent, error) bool) {
		ctx, progress := c.watchProgress(ctx)
		defer progress.stop()
		s := &eventStream{client: c, ctx: ctx, executionID: executionID, cursor: after, yield: yield, progress: progress}
		s.run()
	}
}

// eventStream is one iteration of Events. Its state is owned by the iterating goroutine (see
// sseBridge): yield is only ever called on the caller's goroutine, nothing needs a lock, and no
// event is buffered between the wire and the caller.
type eventStream struct {
	client      *Client
	ctx         context.Context // the caller's, ended early with ErrNoProgress (see progress.go)
	executionID string          // empty until a stream begun by a start knows it (start_stream.go)
	// start, for a stream begun by Run, is the start its first connection sends.
	start    *startCall
	yield    func(api.RuntimeEvent, error) bool
	progress *progressWatch

	cursor int64 // the sequence of the last event yielded (or the caller's after)
	// done: nothing more may be yielded (terminal event yielded, caller stopped, error yielded).
	done bool
	// stopConnection cancels the current connection, to leave go-sse's Connect.
	stopConnection context.CancelFunc
	// open is set when a connection passed validation; cursorAtOpen is the cursor then. A
	// connection that ends without moving the cursor makes the stream ask the JSON replay
	// whether anything is left (the execution may have ended before the cursor).
	open         bool
	cursorAtOpen int64
	openedAt     time.Time
	// quiet fires when the open stream has brought no new event for quietWait; see checkQuiet.
	quiet     *time.Timer
	quietWait time.Duration
	// heartbeat is the interval the current connection's server announced (heartbeat.go),
	// 0 when it did not or WithHeartbeatInterval overrides it; see quietAfter.
	heartbeat time.Duration
	// draining is set after the terminal event while the connection it came on is read to its
	// end (drain.go). It is atomic because drainLimit reads it on go-sse's goroutine.
	draining atomic.Bool
	// startResponse is the answer of the start when the current connection is a streamed start:
	// once it is read to its end, its trailer may hold the final snapshot (start_stream.go).
	startResponse *http.Response
}

// run is the reconnect loop: each attempt is a new request from the cursor (after and
// Last-Event-ID both carry it, so a server that reads only one of them resumes right too; the
// reference reads only after), parsed by a go-sse Connection that does not reconnect by itself
// (go-sse would resend its first URL). run reconnects after a dropped stream, after answers that
// retrying can fix (5xx, 408, 429 that outlasted the HTTP layer's own retries) and after a 204,
// and gives up on the rest.
func (s *eventStream) run() {
	for failures := 0; ; failures++ {
		cursorBefore := s.cursor
		err := s.connect()
		if s.done {
			return
		}
		if s.ctx.Err() != nil {
			s.fail(s.ctxError())
			return
		}
		if s.starting() {
			// The start failed, after the HTTP layer's own retries: as StartExecution would.
			s.fail(startError(err))
			return
		}
		if errors.Is(err, errStartedWithoutStream) {
			failures = -1 // not a failure: follow the execution through the events operation at once
			continue
		}
		// A stream that brought events, or stayed open for a heartbeat interval (one waiting
		// for an approval, cut by a proxy's limit), was healthy: reconnect quickly. Streams cut
		// sooner without bringing anything, and answers that are not streams, back off.
		healthy := s.cursor > cursorBefore || s.open && time.Since(s.openedAt) >= s.quietAfter()
		var apiErr *Error
		var connErr *sse.ConnectionError
		var lastResponse *http.Response
		switch {
		case errors.Is(err, errStreamEnded):
			s.catchUp()
		case errors.As(err, &apiErr) && retryableStatus(apiErr.StatusCode):
			lastResponse = &http.Response{StatusCode: apiErr.StatusCode, Header: apiErr.Header}
		case errors.As(err, &apiErr):
			s.fail(apiErr)
			return
		case errors.Is(err, errNotAnEventStream) || !errors.As(err, &connErr):
			s.fail(fmt.Errorf("harness: event stream of %s: %w", s.executionID, err))
			return
		case s.open && s.cursor == s.cursorAtOpen:
			// The stream dropped without bringing anything new. Either it was cut early, or
			// the execution ended at or before the cursor and the server closes every stream
			// at once: only the replay can tell, and reconnecting forever would not.
			s.catchUp()
		}
		s.open = false
		if s.done {
			return
		}
		if healthy {
			failures = 0
		}
		wait := s.client.reconnectWait(failures, lastResponse)
		s.spanEvent(spanEventReconnect, attribute.String("harness.stream.reason", errorText(err)))
		s.client.log.Debug("harness: reconnecting event stream", "execution", s.executionID,
			"after", s.cursor, "wait", wait, "reason", err)
		if !sleep(s.ctx, wait) {
			s.fail(s.ctxError())
			return
		}
	}
}

// connect runs one go-sse Connection from the cursor until it ends: the stream dropped or
// ended (s.done), ctx ended, or the server's answer was not a stream. The bridge serves its
// callbacks and the quiet checks on this goroutine until it returns.
func (s *eventStream) connect() error {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	s.stopConnection = cancel
	s.startResponse = nil

	req, err := s.newRequest()
	if err != nil {
		return err
	}
	if s.progress != nil {
		ctx = withBytesHook(ctx, s.progress.made)
	}
	req = req.WithContext(ctx)
	if err := s.client.addHeaders(ctx, req); err != nil {
		return err
	}
	transport, validate := s.client.http.Transport, s.validate
	if s.starting() {
		transport, validate = acceptBoth{next: transport}, s.validateStart
	}
	s.heartbeat = 0 // until this connection's answer says
	s.quietWait = s.quietAfter()
	s.quiet = time.NewTimer(s.quietWait)
	defer func() {
		s.quiet.Stop()
		s.quiet = nil
	}()
	err = sseBridge{
		transport: transport, draining: &s.draining, validate: validate, message: s.onMessage,
		timer: func() <-chan time.Time { return s.quiet.C }, onTimer: s.checkQuiet,
	}.connect(ctx, req)
	if s.draining.Load() && ctx.Err() == nil && s.startResponse != nil {
		// The answer ended by itself and Connect has returned: the body and its trailer are
		// read. Not after a cut (drainWait, the caller's ctx): the transport may still be
		// filling the trailer then.
		s.readFinalSnapshot()
	}
	s.draining.Store(false)
	return err
}

// newRequest is the next connection's request: the start (start_stream.go), or the events
// from the cursor.
func (s *eventStream) newRequest() (*http.Request, error) {
	if s.starting() {
		return api.NewStartExecutionRequest(s.client.server, s.start.req) // acceptBoth adds Accept
	}
	after := s.cursor
	return api.NewListOrStreamEventsRequest(s.client.server, s.executionID, &api.ListOrStreamEventsParams{
		After:       &after,
		LastEventID: ptr(strconv.FormatInt(after, 10)),
	})
}

// validate is go-sse's ResponseValidator: 200 text/event-stream opens the stream; 204 ends it;
// anything else becomes the *Error its body describes.
func (s *eventStream) validate(r *http.Response) error {
	switch {
	case r.StatusCode == http.StatusNoContent:
		return errStreamEnded
	case r.StatusCode != http.StatusOK:
		body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		return errorFromResponse(r, body)
	}
	if err := sse.DefaultValidator(r); err != nil {
		return fmt.Errorf("%w: %w", errNotAnEventStream, err)
	}
	s.open, s.cursorAtOpen, s.openedAt = true, s.cursor, time.Now()
	if h, ok := advertisedHeartbeat(r.Header); ok && s.client.followHeartbeat {
		s.heartbeat = h
		if s.quiet != nil { // the first quiet check was armed before the server said
			s.quietWait = h
			s.quiet.Reset(s.quietWait)
		}
	}
	return nil
}

// quietAfter is how long the open stream may bring no new event before the replay is checked:
// one heartbeat interval, the one the server announced unless WithHeartbeatInterval says.
func (s *eventStream) quietAfter() time.Duration {
	if s.heartbeat > 0 {
		return s.heartbeat
	}
	return s.client.quietAfter
}

// onMessage receives every SSE message of the connection.
func (s *eventStream) onMessage(m sse.Event) {
	if s.done || m.Data == "" { // a message with only retry: or id: carries no event
		return
	}
	var e api.RuntimeEvent
	if err := json.Unmarshal([]byte(m.Data), &e); err != nil {
		s.fail(fmt.Errorf("harness: event stream of %s: undecodable event after id %q: %w", s.executionID, m.LastEventID, err))
		return
	}
	s.accept(e)
}

// ctxError is why s.ctx ended: the caller's context error, or ErrNoProgress (wrapped).
func (s *eventStream) ctxError() error {
	err := context.Cause(s.ctx)
	if errors.Is(err, ErrNoProgress) {
		return fmt.Errorf("harness: events of %s after %d: %w", s.executionID, s.cursor, err)
	}
	return err
}

// finish ends the stream without an error.
func (s *eventStream) finish() {
	s.done = true
	if s.stopConnection != nil {
		s.stopConnection()
	}
}

// fail yields err as the stream's last element, unless the stream has already ended.
func (s *eventStream) fail(err error) {
	if s.done {
		return
	}
	s.finish()
	s.yield(api.RuntimeEvent{}, err)
}
