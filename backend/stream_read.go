package backend

import (
	"encoding/json"
	"errors"
	"sync"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/streams"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// StreamGapEventType is the type of a stream's first message when its cursor had expired: the
// stream goes on from the oldest entry kept, and says so first, instead of a Problem that would
// stop an EventSource from ever reconnecting (docs/protocol.md).
const StreamGapEventType = api.StandardEventType("stream.gap")

// msgCursorExpired is the message of a page whose cursor is older than what the log keeps.
const msgCursorExpired = "The stream log no longer holds the events after this cursor (retention); resume after details.resumeAfter"

// logUnreadable keeps a runtime error as it is and makes a store failure while a stream opens
// or pages UNAVAILABLE.
func logUnreadable(err error) error {
	if _, ok := errors.AsType[*Error](err); ok {
		return err
	}
	return &Error{Code: CodeUnavailable, Message: "The event log cannot be read now; try again"}
}

// Stream is an open stream (OpenStream): an execution's subscription, or a conversation's or a
// tenant's subscription of the stream hub. It holds no goroutine: the caller waits on Ready
// (and Lapsed) and drains with Read. Ready and Read are for one goroutine; Close may come from
// any.
type Stream struct {
	exec *Subscription // an execution's stream

	// A conversation's or a tenant's stream: its hub, scope and cursor tag, what it selects,
	// and where it starts (afterHeader: the position came from Last-Event-ID; fromNow: none was
	// given and it starts at the log's end).
	hub         *streams.Hub
	scope       streams.Scope
	tag         string
	filter      streams.Filter
	after       int64
	afterHeader bool
	fromNow     bool
	sub         *streams.Subscription
	gap         *Event // the first message, when the cursor had expired
	gapPosition int64
	// deleted: a conversation's stream read its conversation's erasure marker; it ends.
	deleted bool
	// positions are those of the events of the last Read, for their ids.
	positions []int64
	events    []Event
}

// subscribe positions a live conversation's or tenant's stream: from the oldest entry kept,
// after a gap message, when its cursor had expired.
func (s *Stream) subscribe() error {
	after := s.after
	var expired *streams.ExpiredError
	if err := s.hub.CheckCursor(after); errors.As(err, &expired) {
		after = expired.Oldest - 1
		if s.after > 0 { // 0 asks for whatever is kept: nothing of it is missing
			s.gap, s.gapPosition = s.gapEvent(after), after
		}
	} else if err != nil {
		return logUnreadable(err)
	}
	sub, err := s.hub.Subscribe(s.filter, after)
	if err != nil {
		// Closing, or a node that cannot vouch for its lease: another node (or this one in a
		// moment) serves the stream.
		return &Error{Code: CodeUnavailable, Message: "This node cannot serve the stream now; reconnect"}
	}
	s.sub = sub
	return nil
}

func (s *Stream) gapEvent(resumeAfter int64) *Event {
	data, _ := json.Marshal(api.StreamGap{Type: api.StreamGapType(StreamGapEventType),
		RequestedCursor: s.hub.Cursor(s.scope, s.after), ResumeAfter: s.hub.Cursor(s.scope, resumeAfter)})
	return &Event{Type: StreamGapEventType, JSON: data}
}

// ConversationDeletedEventType is the type of the message that stands in a conversation's or
// a tenant's stream where an erased conversation's entries were (api.ConversationDeleted).
const ConversationDeletedEventType = api.StandardEventType(api.ConversationDeletedTypeConversationDeleted)

// erasedEvent is the message of an erasure's marker: which conversation, when, and how many
// executions went with it.
func erasedEvent(t store.Tombstone) Event {
	// api.ConversationDeleted's members, with type first as in every event's JSON a reader
	// sees (the generated struct orders them alphabetically).
	data, _ := json.Marshal(struct {
		Type           api.ConversationDeletedType `json:"type"`
		ConversationID string                      `json:"conversationId"`
		Time           api.Timestamp               `json:"time"`
		Executions     int                         `json:"executions"`
	}{api.ConversationDeletedTypeConversationDeleted, t.ConversationID, formatTimestamp(t.DeletedAt), t.Executions})
	return Event{Type: ConversationDeletedEventType, JSON: data}
}

// logBatches lends Read the slice a subscription reads a batch into: reused across the streams
// (no allocation per subscriber per commit), and held by none while it waits.
var logBatches = sync.Pool{New: func() any { return new([]store.LogEntry) }}

// Ready is closed when Read has something to return (events, or the end). Take it before Read.
func (s *Stream) Ready() <-chan struct{} {
	switch {
	case s.exec != nil:
		return s.exec.Ready()
	case s.gap != nil, s.deleted: // the gap to send, or the end to report
		return closedChan
	}
	return s.sub.Ready()
}

// Read returns up to max events without blocking. An execution's stream ends (done) as its
// Subscription does. A conversation's or a tenant's ends when the hub ends it (shutdown,
// EndStreams) or when its cursor fell out of what the log keeps while it was open: the client
// resumes from its last id and is told of the gap then.
func (s *Stream) Read(max int) ([]Event, bool, error) {
	if s.exec != nil {
		return s.exec.Read(max)
	}
	if s.deleted {
		return nil, true, nil
	}
	if g := s.gap; g != nil {
		s.gap = nil
		s.positions = append(s.positions[:0], s.gapPosition)
		s.events = append(s.events[:0], *g)
		return s.events, false, nil
	}
	batch := logBatches.Get().(*[]store.LogEntry)
	defer func() {
		clear(*batch) // (the events' JSON is not held by the pool)
		*batch = (*batch)[:0]
		logBatches.Put(batch)
	}()
	entries, err := s.sub.ReadAppend((*batch)[:0], max)
	*batch = entries
	var expired *streams.ExpiredError
	switch {
	case errors.Is(err, streams.ErrEnded), errors.Is(err, streams.ErrClosed), errors.As(err, &expired):
		return nil, true, nil
	case err != nil:
		return nil, false, err
	}
	s.positions, s.events = s.positions[:0], s.events[:0]
	for _, e := range entries {
		s.positions = append(s.positions, e.Position)
		if e.Erased != nil {
			s.events = append(s.events, erasedEvent(*e.Erased))
			if s.Conversation() {
				// The conversation is gone: its stream ends with the message that says so.
				s.deleted = true
				return s.events, false, nil
			}
			continue
		}
		s.events = append(s.events, e.Event)
	}
	return s.events, false, nil
}

// AwaitingAction reports whether an execution's stream waits for the response to an action
// (Subscription.AwaitingAction); a conversation's or a tenant's never does.
func (s *Stream) AwaitingAction() bool { return s.exec != nil && s.exec.AwaitingAction() }

// Lapsed is closed when the stream must end before its log does (this node can no longer vouch
// for its lease, or it is closing): Read then reports the end.
func (s *Stream) Lapsed() <-chan struct{} {
	if s.exec != nil {
		return s.exec.Lapsed()
	}
	return s.sub.Ended()
}

// Close ends the stream; later Reads return done. Safe to call from any goroutine.
func (s *Stream) Close() {
	switch {
	case s.exec != nil:
		s.exec.Close()
	case s.sub != nil:
		s.sub.Close()
	}
}

// maxEmptyReads bounds the reads of the log one page makes while they find nothing its filters
// keep (each examines at most 16 pages' worth of entries).
const maxEmptyReads = 16

// Page reads the stored events after a conversation's or a tenant's cursor (a stream opened
// with StreamRequest.Page): at most limit, and the cursor to go on from. A cursor older than
// what the log keeps is CURSOR_EXPIRED, with the cursor to resume after in its details.
func (s *Stream) Page(limit int) (events []Event, next string, err error) {
	reached := s.after
	// A narrow filter over a busy log may examine a whole read without a match: the page goes
	// on reading (a bounded number of times) rather than answer an empty page that is not the
	// end, so that a client may take an empty page for the end, as it does on an execution's.
	for reads := 0; !s.fromNow && len(events) == 0 && reads < maxEmptyReads; reads++ {
		p, err := s.hub.Page(s.filter, reached, limit)
		var expired *streams.ExpiredError
		if errors.As(err, &expired) {
			return nil, "", &Error{Code: CodeCursorExpired, Message: msgCursorExpired,
				Details: api.JSONObject{"resumeAfter": s.hub.Cursor(s.scope, expired.Oldest-1)}}
		}
		if err != nil {
			return nil, "", logUnreadable(err)
		}
		for _, e := range p.Entries {
			if e.Erased != nil {
				events = append(events, erasedEvent(*e.Erased))
				continue
			}
			events = append(events, e.Event)
		}
		if p.Reached == reached {
			break // the end of the log
		}
		reached = p.Reached
	}
	return events, s.hub.Cursor(s.scope, reached), nil
}
