package proxy

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	sse "github.com/tmaxmax/go-sse"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/streams"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// gapEventType is the type of the first message of a stream whose cursor had expired: the
// stream goes on from the oldest entry kept, and says so first, instead of a Problem that
// would stop an EventSource from ever reconnecting (docs/protocol.md).
const gapEventType = api.StandardEventType("stream.gap")

// streamLog opens the SSE form of a conversation's or tenant's stream: the events after the
// cursor, then live ones, without an end of its own.
func (h *Handler) streamLog(w http.ResponseWriter, r *http.Request, hub *streams.Hub, req streamRequest) {
	feed := &logFeed{tag: hub.CursorTag(req.scope), conversation: req.scope.ConversationID != "", frames: &h.frames}
	after := req.after
	var expired *streams.ExpiredError
	if err := hub.CheckCursor(after); errors.As(err, &expired) {
		after = expired.Oldest - 1
		if req.after > 0 { // 0 asks for whatever is kept: nothing of it is missing
			feed.gap = h.gapEvent(hub, req, after)
		}
	} else if err != nil {
		h.writeError(w, r, storeUnavailable(err))
		return
	}
	sub, err := hub.Subscribe(req.filter, after)
	if err != nil {
		// Closing, or a node that cannot vouch for its lease: another node (or this one in a
		// moment) serves the stream.
		w.Header().Set("Retry-After", "1")
		h.writeError(w, r, &backend.Error{Code: backend.CodeUnavailable, Message: "This node cannot serve the stream now; reconnect"})
		return
	}
	feed.sub = sub
	h.serveStream(w, r, feed)
}

func (h *Handler) gapEvent(hub *streams.Hub, req streamRequest, resumeAfter int64) *gapMessage {
	resume := hub.Cursor(req.scope, resumeAfter)
	data, _ := json.Marshal(api.StreamGap{Type: api.StreamGapType(gapEventType), RequestedCursor: hub.Cursor(req.scope, req.after), ResumeAfter: resume})
	return &gapMessage{event: backend.Event{Type: gapEventType, JSON: data}, position: resumeAfter}
}

type gapMessage struct {
	event    backend.Event
	position int64
}

// logFeed is a stream's view of a hub subscription (eventFeed): the entries' events, with
// their cursors as ids.
type logFeed struct {
	tag          string // the stream's cursor tag (streams.FormatCursor)
	conversation bool   // a conversation's stream (else a tenant's)
	frames       *sharedFrames
	sub          *streams.Subscription
	gap          *gapMessage // the first message, when the cursor had expired
	// positions are those of the events of the last Read, for their ids.
	positions []int64
	events    []backend.Event
}

// logBatches lends Read the slice a subscription reads a batch into: reused across the streams
// (no allocation per subscriber per commit), and held by none while it waits.
var logBatches = sync.Pool{New: func() any { return new([]store.LogEntry) }}

func (f *logFeed) Ready() <-chan struct{} {
	if f.gap != nil {
		return closedChan
	}
	return f.sub.Ready()
}

// Read returns the next events. The stream ends (done) when the hub ends it (shutdown,
// EndStreams) or when its cursor fell out of what the log keeps while it was open: the
// client resumes from its last id and is told of the gap then.
func (f *logFeed) Read(max int) ([]backend.Event, bool, error) {
	if g := f.gap; g != nil {
		f.gap = nil
		f.positions = append(f.positions[:0], g.position)
		f.events = append(f.events[:0], g.event)
		return f.events, false, nil
	}
	batch := logBatches.Get().(*[]store.LogEntry)
	defer func() {
		clear(*batch) // (the events' JSON is not held by the pool)
		*batch = (*batch)[:0]
		logBatches.Put(batch)
	}()
	entries, err := f.sub.ReadAppend((*batch)[:0], max)
	*batch = entries
	var expired *streams.ExpiredError
	switch {
	case errors.Is(err, streams.ErrEnded), errors.Is(err, streams.ErrClosed), errors.As(err, &expired):
		return nil, true, nil
	case err != nil:
		return nil, false, err
	}
	f.positions, f.events = f.positions[:0], f.events[:0]
	for _, e := range entries {
		f.positions = append(f.positions, e.Position)
		f.events = append(f.events, e.Event)
	}
	return f.events, false, nil
}

func (f *logFeed) AwaitingAction() bool { return false }

// Lapsed is closed when the hub ends the stream (the node can no longer vouch for its lease,
// or it is closing): Read then reports the end.
func (f *logFeed) Lapsed() <-chan struct{} { return f.sub.Ended() }
func (f *logFeed) Close()                  { f.sub.Close() }

func (f *logFeed) eventID(i int, _ backend.Event) sse.EventID {
	return sse.ID(streams.FormatCursor(f.tag, f.positions[i]))
}

// sharedFrame shares the frames of log entries, not the gap message's (Read's first, on its
// own; its position is the one it resumes after, whose entry is another message).
func (f *logFeed) sharedFrame(i int, ev backend.Event) []byte {
	if ev.Type == gapEventType {
		return nil
	}
	return f.frames.frame(f.tag, f.conversation, f.positions[i], ev)
}

// closedChan is returned by Ready when Read has something at once.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
