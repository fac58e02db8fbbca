package backend

import (
	"context"
	"errors"
	"strconv"

	"github.com/harness-edge/harness-edge/backend/streams"
)

// The streams of every scope (docs/protocol.md): an execution's events, a conversation's or a
// tenant's. OpenStream is the one way in: it checks the request in the protocol's order, finds
// where the events come from (the execution's handle, or the stream hub over the store's log,
// backend/streams) and returns a Stream, whose first message is the gap when the cursor had
// expired. The wire layer only frames what it reads (proxy/events_sse.go).

// StreamRequest says which stream to open, and from where.
type StreamRequest struct {
	// The scope: an execution's events (ExecutionID), a conversation's (ConversationID) or,
	// with neither, every event of ctx's tenant (see WithTenant).
	ExecutionID    string
	ConversationID string
	// After is where an execution's stream starts: after this sequence.
	After int64
	// Cursor and LastEventID are where a conversation's or a tenant's stream starts, as the
	// client gave them (the after parameter and the Last-Event-ID header; "" none): each must
	// be a cursor this stream gave, and LastEventID, when given, wins. Without either a
	// conversation's stream starts at its beginning and a tenant's at the log's end.
	Cursor, LastEventID string
	// Filter narrows a conversation's or a tenant's stream (its Tenant is ctx's).
	Filter StreamFilter
	// Page opens a conversation's or a tenant's stream for Stream.Page (a JSON replay) rather
	// than as a live feed. An execution's stream is always live (ListEvents pages it).
	Page bool
	// Invalid is what the caller found wrong with the rest of a conversation's or a tenant's
	// request (its page size, its filters): returned once the cursors are checked, as the
	// protocol orders the checks.
	Invalid error
}

// StreamFilter selects the events of a conversation's or a tenant's stream.
type StreamFilter = streams.Filter

// ErrNoStreamLog refuses a conversation's or a tenant's stream on a store that keeps no stream
// log (the routes do not exist there).
var ErrNoStreamLog = errors.New("backend: the store keeps no stream log")

// CursorError refuses a conversation's or a tenant's cursor: malformed, another stream's, or
// ahead of the log's end. InLastEventID: the Last-Event-ID's, else the after parameter's.
type CursorError struct {
	InLastEventID bool
	Reason        string
}

func (e *CursorError) Error() string { return "backend: stream cursor refused: " + e.Reason }

const (
	reasonMalformedCursor = "not a cursor of this API: use an id or a nextCursor this stream gave, or 0"
	reasonForeignCursor   = "a cursor of another conversation, another tenant's stream or another server"
)

// FormatStreamCursor is the cursor of position pos under a stream's tag (Stream.Shared).
func FormatStreamCursor(tag string, pos int64) string { return streams.FormatCursor(tag, pos) }

// OpenStream opens the stream req names. An execution's: NOT_FOUND if unknown or another
// tenant's; UNAVAILABLE while this node cannot vouch for its cluster lease. A conversation's or
// a tenant's: ErrNoStreamLog without a log; a *CursorError for a cursor not of this stream;
// NOT_FOUND for a conversation unknown to ctx's tenant; UNAVAILABLE when the log cannot be read
// or this node cannot serve the stream now (another node, or this one in a moment, will). ctx
// only names the tenant: it does not bound the stream.
func (r *Runtime) OpenStream(ctx context.Context, req StreamRequest) (*Stream, error) {
	if req.ExecutionID != "" {
		return openExecutionStream(ctx, r, req.ExecutionID, req.After)
	}
	if r.streams == nil {
		return nil, ErrNoStreamLog
	}
	return openLogStream(ctx, r, req)
}

// openExecutionStream positions a subscription of the execution's events after the cursor.
func openExecutionStream(ctx context.Context, r *Runtime, executionID string, after int64) (*Stream, error) {
	if err := r.checkOpen(); err != nil {
		return nil, err
	}
	if after < 0 {
		return nil, newError(CodeValidation, "Event cursor must be a non-negative integer")
	}
	// The lapse channel before the check: a lapse that comes after the check closes it.
	var lapsed <-chan struct{}
	if r.cluster != nil {
		lapsed = r.cluster.Lapsed()
	}
	if err := r.vouch(); err != nil {
		return nil, err
	}
	h, err := r.locate(ctx, executionID)
	if err != nil {
		return nil, err
	}
	src, err := h.Follow()
	if err != nil {
		return nil, err
	}
	// The stream and its subscription in one allocation: this is the second request of every
	// portable client (start, then stream).
	st := &executionStream{sub: Subscription{src: src, cursor: after, lapsed: lapsed}}
	st.exec = &st.sub
	return &st.Stream, nil
}

// executionStream is an execution's Stream together with the subscription it reads.
type executionStream struct {
	Stream
	sub Subscription
}

// openLogStream checks a conversation's or a tenant's request, in the protocol's order (the
// cursors, the caller's own checks, the conversation, the cursor's place in the log), and
// positions the stream.
func openLogStream(ctx context.Context, r *Runtime, req StreamRequest) (*Stream, error) {
	hub := r.streams
	tenant := TenantFrom(ctx).ID
	scope := streams.TenantScope(tenant)
	if req.ConversationID != "" {
		scope = streams.ConversationScope(tenant, req.ConversationID)
	}
	s := &Stream{hub: hub, scope: scope, tag: hub.CursorTag(scope), filter: req.Filter}
	given := false
	for _, c := range []struct {
		cursor string
		header bool
	}{{req.Cursor, false}, {req.LastEventID, true}} {
		if c.cursor == "" {
			continue
		}
		pos, err := hub.ParseCursor(scope, c.cursor)
		if err != nil {
			reason := reasonMalformedCursor
			if errors.Is(err, streams.ErrForeignCursor) {
				reason = reasonForeignCursor
			}
			return nil, &CursorError{InLastEventID: c.header, Reason: reason}
		}
		s.after, s.afterHeader, given = pos, c.header, true
	}
	if req.Invalid != nil {
		return nil, req.Invalid
	}
	// Another tenant's conversation answers as an unknown one: 404, nothing opened.
	if req.ConversationID != "" {
		if _, err := r.GetConversation(ctx, req.ConversationID); err != nil {
			return nil, err
		}
		s.filter.ConversationID = req.ConversationID
	}
	s.filter.Tenant = tenant
	bounds, err := hub.Bounds()
	if err != nil {
		return nil, logUnreadable(err)
	}
	if s.fromNow = !given && req.ConversationID == ""; s.fromNow {
		s.after = bounds.Last
	}
	// A cursor is a position the log has reached: one beyond its end was never given out (or
	// was given by a log since reset), and following it would skip every event up to it.
	if s.after > bounds.Last {
		reason := "ahead of the end of this stream's log (" + hub.Cursor(scope, bounds.Last) + "): not a cursor it gave"
		return nil, &CursorError{InLastEventID: s.afterHeader, Reason: reason}
	}
	if req.Page {
		return s, nil
	}
	return s, s.subscribe()
}

// Exhausted reports, for an execution's stream, Subscription.Exhausted: a stream from here would
// end with nothing in it. A conversation's or a tenant's stream has no end of its own: false.
func (s *Stream) Exhausted() bool { return s.exec != nil && s.exec.Exhausted() }

// EventID is the id of events[i] of the last Read: an execution event's sequence, or a log
// entry's cursor.
func (s *Stream) EventID(i int, ev Event) string {
	if s.exec != nil {
		return strconv.FormatInt(ev.Sequence, 10)
	}
	return streams.FormatCursor(s.tag, s.positions[i])
}

// Shared reports, for events[i] of the last Read of a conversation's or a tenant's stream, its
// scope's tag and its position: every stream of the scope sends it as the same message, so its
// frame may be shared (proxy/streams_frames.go). Not an execution's events, nor the gap.
func (s *Stream) Shared(i int, ev Event) (tag string, pos int64, ok bool) {
	if s.exec != nil || ev.Type == StreamGapEventType {
		return "", 0, false
	}
	return s.tag, s.positions[i], true
}

// Conversation reports a conversation's stream (else a tenant's or an execution's).
func (s *Stream) Conversation() bool { return s.scope.ConversationID != "" }
