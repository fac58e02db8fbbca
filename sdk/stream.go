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
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/harness-edge/harness-edge/sdk/api"
)

const (
	// maxEventBytes bounds one SSE message. The server caps an event's data at 1 MiB by
	// default; the envelope and JSON escaping need room beyond that.
	maxEventBytes = 4 << 20
	// replayPageSize is the page size of the JSON replay that fills gaps.
	replayPageSize = 1000
)

// errStreamEnded is what the response validator reports for 204 No Content, the SSE way of
// saying "nothing more, do not reconnect".
var errStreamEnded = errors.New("harness: the server ended the event stream (204)")

// Events streams the events of an execution whose sequence is greater than after (0 for all of
// them), each exactly once and in sequence order, and ends after the terminal event
// (run.completed, run.failed or run.cancelled). With after at or past the end of a finished
// execution it ends without yielding.
//
// The network stays out of sight: when the stream drops, or the server answers 5xx, 408 or 429,
// it reconnects with backoff and resumes from the last sequence it yielded (Last-Event-ID and
// after); events delivered twice across reconnects are dropped by (executionId, sequence); a
// gap in the sequence is filled from the JSON replay (ListEvents). It keeps reconnecting for as
// long as ctx lives, like a browser's EventSource: give ctx a deadline to bound it.
//
// An error ends the sequence: ctx's error when ctx ends, an *Error for an answer that retrying
// cannot fix (ErrNotFound for an unknown execution), or a protocol violation. Stopping the
// loop early closes the connection; it never affects the execution.
func (c *Client) Events(ctx context.Context, executionID string, after int64) iter.Seq2[api.RuntimeEvent, error] {
	return func(yield func(api.RuntimeEvent, error) bool) {
		s := &eventStream{client: c, ctx: ctx, executionID: executionID, cursor: after, yield: yield}
		s.run()
	}
}

// eventStream is one iteration of Events. Everything runs on the iterating goroutine: go-sse
// calls the validator, the message callback and OnRetry from inside Connect, and those call
// yield directly, so there is no locking and no event buffered between the wire and the caller.
type eventStream struct {
	client      *Client
	ctx         context.Context
	executionID string
	yield       func(api.RuntimeEvent, error) bool

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
}

// run is the outer loop. go-sse's Connection reconnects by itself after a dropped stream, but
// treats any response it does not accept as final; run reconnects after those that retrying
// can fix (5xx, 408, 429 that outlasted the HTTP layer's own retries) and after a 204.
func (s *eventStream) run() {
	for failures := 0; ; failures++ {
		cursorBefore := s.cursor
		err := s.connect()
		if s.done {
			return
		}
		if s.ctx.Err() != nil {
			s.fail(s.ctx.Err())
			return
		}
		var apiErr *Error
		var lastResponse *http.Response
		switch {
		case errors.Is(err, errStreamEnded):
			s.catchUp()
			if s.done {
				return
			}
		case errors.As(err, &apiErr) && retryableStatus(apiErr.StatusCode):
			lastResponse = &http.Response{StatusCode: apiErr.StatusCode, Header: apiErr.Header}
		case errors.As(err, &apiErr):
			s.fail(apiErr)
			return
		default:
			s.fail(fmt.Errorf("harness: event stream of %s: %w", s.executionID, err))
			return
		}
		if s.cursor > cursorBefore {
			failures = 0
		}
		wait := s.client.retry.backoff(failures, lastResponse)
		s.client.log.Debug("harness: reconnecting event stream", "execution", s.executionID,
			"after", s.cursor, "wait", wait, "reason", err)
		if !sleep(s.ctx, wait) {
			s.fail(s.ctx.Err())
			return
		}
	}
}

// connect runs one go-sse Connection from the cursor until it stops for good: the stream
// ended (s.done), ctx ended, or the server gave an answer go-sse will not retry.
func (s *eventStream) connect() error {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	s.stopConnection = cancel

	after := s.cursor
	req, err := api.NewListOrStreamEventsRequest(s.client.server, s.executionID, &api.ListOrStreamEventsParams{
		After:       &after,
		LastEventID: new(strconv.FormatInt(after, 10)),
	})
	if err != nil {
		return err
	}
	req = req.WithContext(ctx)
	if err := s.client.addHeaders(ctx, req); err != nil {
		return err
	}
	client := sse.Client{
		HTTPClient:        s.client.http,
		ResponseValidator: s.validate,
		OnRetry:           s.onReconnect,
		Backoff: sse.Backoff{
			InitialInterval: s.client.retry.MinWait,
			Multiplier:      2,
			Jitter:          0.5,
			MaxInterval:     s.client.retry.MaxWait,
		},
	}
	conn := client.NewConnection(req)
	conn.Buffer(nil, maxEventBytes)
	conn.SubscribeToAll(s.onMessage)
	return conn.Connect()
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
		return err
	}
	s.open, s.cursorAtOpen = true, s.cursor
	return nil
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

// onReconnect is go-sse's OnRetry: the connection dropped and go-sse is about to reconnect.
func (s *eventStream) onReconnect(err error, wait time.Duration) {
	if s.done {
		return
	}
	s.client.log.Debug("harness: event stream dropped; reconnecting", "execution", s.executionID,
		"after", s.cursor, "wait", wait, "reason", err)
	if s.open && s.cursor == s.cursorAtOpen {
		// The connection brought nothing new. Either it was cut early, or the execution ended
		// at or before the cursor and the server closes every stream at once: only the replay
		// can tell, and reconnecting forever would not.
		s.catchUp()
	}
	s.open = false
}

// accept yields e if it is the next event, drops it if it was yielded already, and fills the
// gap from the JSON replay if events are missing before it.
func (s *eventStream) accept(e api.RuntimeEvent) {
	switch {
	case e.ExecutionId != s.executionID:
		s.fail(fmt.Errorf("harness: event stream of %s delivered event %s of execution %s", s.executionID, e.Id, e.ExecutionId))
	case e.Sequence <= s.cursor:
		// a duplicate, re-sent after a reconnect
	case e.Sequence > s.cursor+1:
		s.catchUp()
		if !s.done && e.Sequence == s.cursor+1 {
			s.deliver(e)
		}
		// If the replay failed, e is dropped with the gap before it; the stream reconnects
		// from the cursor later and gets both again.
	default:
		s.deliver(e)
	}
}

// deliver yields the next event and ends the stream after the terminal one.
func (s *eventStream) deliver(e api.RuntimeEvent) {
	if !s.yield(e, nil) {
		s.finish()
		return
	}
	s.cursor = e.Sequence
	if IsTerminalEvent(e.Type) {
		s.finish()
	}
}

// catchUp yields what the JSON replay has after the cursor, and ends the stream if the
// execution had finished before the cursor. Transient failures are left to the reconnects.
func (s *eventStream) catchUp() {
	// Read the state before the replay: an execution that is terminal now has all its events
	// stored, so the replay below holds its terminal event if that comes after the cursor.
	exec, err := s.client.GetExecution(s.ctx, s.executionID)
	if err != nil {
		s.catchUpFailed(err)
		return
	}
	for !s.done {
		page, err := s.client.ListEvents(s.ctx, s.executionID, s.cursor, replayPageSize)
		if err != nil {
			s.catchUpFailed(err)
			return
		}
		if len(page.Events) == 0 {
			break
		}
		for _, e := range page.Events {
			if e.Sequence > s.cursor+1 || e.ExecutionId != s.executionID {
				s.fail(fmt.Errorf("harness: replay of %s after %d returned event %s", s.executionID, s.cursor, e.Id))
				return
			}
			if e.Sequence == s.cursor+1 {
				s.deliver(e)
			}
			if s.done {
				return
			}
		}
	}
	if !s.done && IsTerminalState(exec.State) {
		s.finish() // its terminal event is at or before the cursor the caller gave
	}
}

// catchUpFailed ends the stream for an answer that retrying cannot fix and otherwise leaves
// recovery to the reconnects.
func (s *eventStream) catchUpFailed(err error) {
	var apiErr *Error
	if errors.As(err, &apiErr) && !retryableStatus(apiErr.StatusCode) {
		s.fail(apiErr)
		return
	}
	s.client.log.Debug("harness: event replay failed; the stream will retry", "execution", s.executionID, "error", err)
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
