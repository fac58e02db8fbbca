package sdk

import (
	"errors"
	"fmt"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// An execution's events in order, each once (Events' side of the stream past the wire): duplicates
// dropped, gaps filled from the JSON replay, the replay asked when a stream stays quiet, and the
// end after the terminal event.

// accept yields e if it is the next event, drops it if it was yielded already, and fills the
// gap from the JSON replay if events are missing before it.
func (s *eventStream) accept(e api.RuntimeEvent) {
	switch {
	case e.ExecutionID != s.executionID:
		s.fail(fmt.Errorf("harness: event stream of %s delivered event %s of execution %s", s.executionID, e.ID, e.ExecutionID))
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

// deliver yields the next event and ends the stream after the terminal one, reading its
// connection to the end (drain.go), also when the caller stops the loop at that event.
func (s *eventStream) deliver(e api.RuntimeEvent) {
	s.progress.pause() // the caller's time with the event is not the stream's
	more := s.yield(e, nil)
	s.progress.resume()
	if IsTerminalEvent(e.Type) {
		s.cursor = e.Sequence
		s.drain()
		return
	}
	if !more {
		s.finish() // stopped early: the stream could go on for long, so cut it
		return
	}
	s.cursor = e.Sequence
	if s.quiet != nil {
		s.quietWait = s.quietAfter()
		s.quiet.Reset(s.quietWait)
	}
}

// checkQuiet runs when the open stream has brought no new event for a while. Heartbeats say
// the connection lives, but an event lost on the way (a proxy that dropped a frame) is only
// noticed when a later one arrives, and if the lost one was action.required nothing later
// comes: the execution waits for an answer, the caller for the event. So ask the JSON replay.
// The checks back off while the quiet lasts, and start over with the next event.
func (s *eventStream) checkQuiet() {
	if s.draining.Load() {
		s.stopConnection() // no end of the body in time: cut it (and Run asks for the snapshot)
		return
	}
	if !s.done && s.open {
		s.client.log.Debug("harness: event stream quiet; checking the replay for lost events",
			"execution", s.executionID, "after", s.cursor, "quiet", s.quietWait)
		s.replay()
	}
	if s.done {
		return
	}
	s.quietWait = min(2*s.quietWait, quietCheckMaxIntervals*s.quietAfter())
	s.quiet.Reset(s.quietWait)
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
	if s.replay() && !s.done && IsTerminalState(exec.State) {
		s.finish() // its terminal event is at or before the cursor the caller gave
	}
}

// replay yields what the JSON replay has after the cursor, and reports whether it read the
// replay to its end.
func (s *eventStream) replay() bool {
	filled := 0
	defer func() { s.gapFilled(filled) }()
	for !s.done {
		page, err := s.client.ListEvents(s.ctx, s.executionID, s.cursor, replayPageSize)
		if err != nil {
			s.catchUpFailed(err)
			return false
		}
		if len(page.Events) == 0 {
			return true
		}
		for _, e := range page.Events {
			if e.Sequence > s.cursor+1 || e.ExecutionID != s.executionID {
				s.fail(fmt.Errorf("harness: replay of %s after %d returned event %s", s.executionID, s.cursor, e.ID))
				return false
			}
			if e.Sequence == s.cursor+1 {
				s.deliver(e)
				filled++
			}
			if s.done {
				return false
			}
		}
	}
	return false
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
