package proxy

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/streams"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The conversation and tenant streams (extension; docs/protocol.md, "Conversation and tenant
// streams"): GET /v1/conversations/{id}/events and GET /v1/events, a JSON page or an SSE
// stream as the execution's events operation, over the runtime's stream hub
// (backend/streams). The SSE side is streams_sse.go.

const (
	msgStreamAfter       = "after must be a cursor of this stream"
	msgStreamLastEventID = "Last-Event-ID must be a cursor of this stream"
	msgUnknownFilter     = "Unknown query parameter"
	msgInvalidType       = "type must list event types"
	msgInvalidLifecycle  = "lifecycle must be true or false"
	msgInvalidProvider   = "provider must list provider ids"
	msgInvalidStreamConv = "conversation must be a conversation id"
	msgCursorExpired     = "The stream log no longer holds the events after this cursor (retention); resume after details.resumeAfter"

	reasonMalformedCursor = "not a cursor of this API: use an id or a nextCursor this stream gave, or 0"
	reasonForeignCursor   = "a cursor of another conversation, another tenant's stream or another server"
)

// streamRequest is a validated request of either stream.
type streamRequest struct {
	scope  streams.Scope
	filter streams.Filter
	// after is the position to read after; fromNow: none was given and the stream starts at
	// the log's current end (the tenant stream).
	after   int64
	fromNow bool
	limit   int
	// afterHeader: after came from Last-Event-ID (an error then names the header).
	afterHeader bool
}

// conversationEvents serves GET /v1/conversations/{id}/events.
func (h *Handler) conversationEvents(w http.ResponseWriter, r *http.Request, conversationID string) {
	hub := h.rt.Streams()
	if hub == nil {
		routeNotFound(w, r)
		return
	}
	tenant := backend.TenantFrom(r.Context()).ID
	req, err := h.parseStreamRequest(r, hub, streams.ConversationScope(tenant, conversationID), false)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	// Another tenant's conversation answers as an unknown one: 404, nothing opened.
	if _, err := h.rt.GetConversation(r.Context(), conversationID); err != nil {
		h.writeError(w, r, err)
		return
	}
	req.filter.ConversationID = conversationID
	h.serveLog(w, r, hub, req)
}

// tenantEvents serves GET /v1/events.
func (h *Handler) tenantEvents(w http.ResponseWriter, r *http.Request) {
	hub := h.rt.Streams()
	if hub == nil {
		routeNotFound(w, r)
		return
	}
	tenant := backend.TenantFrom(r.Context()).ID
	req, err := h.parseStreamRequest(r, hub, streams.TenantScope(tenant), true)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	h.serveLog(w, r, hub, req)
}

// serveLog answers a validated request: JSON or SSE by the Accept header.
func (h *Handler) serveLog(w http.ResponseWriter, r *http.Request, hub *streams.Hub, req streamRequest) {
	bounds, err := hub.Bounds()
	if err != nil {
		h.writeError(w, r, storeUnavailable(err))
		return
	}
	if req.fromNow {
		req.after = bounds.Last
	}
	// A cursor is a position the log has reached: one beyond its end was never given out (or
	// was given by a log since reset), and following it would skip every event up to it.
	if req.after > bounds.Last {
		reason := "ahead of the end of this stream's log (" + hub.Cursor(req.scope, bounds.Last) + "): not a cursor it gave"
		if req.afterHeader {
			h.writeError(w, r, invalidHeader(msgStreamLastEventID, "Last-Event-ID", reason))
		} else {
			h.writeError(w, r, invalidParameter(msgStreamAfter, "after", reason))
		}
		return
	}
	if r.Method != http.MethodHead && wantsEventStream(r.Header) {
		h.streamLog(w, r, hub, req)
		return
	}
	h.replayLog(w, r, hub, req)
}

// replayLog answers a StreamEventList: the stored event bytes, as the execution replay does.
func (h *Handler) replayLog(w http.ResponseWriter, r *http.Request, hub *streams.Hub, req streamRequest) {
	var page struct {
		entries []backend.Event
		reached int64
	}
	page.reached = req.after
	// A narrow filter over a busy log may examine a whole read without a match: the page goes
	// on reading (a bounded number of times) rather than answer an empty page that is not the
	// end, so that a client may take an empty page for the end, as it does on an execution's.
	for reads := 0; !req.fromNow && len(page.entries) == 0 && reads < maxEmptyReads; reads++ {
		p, err := hub.Page(req.filter, page.reached, req.limit)
		var expired *streams.ExpiredError
		if errors.As(err, &expired) {
			h.writeError(w, r, &backend.Error{Code: backend.CodeCursorExpired, Message: msgCursorExpired,
				Details: api.JSONObject{"resumeAfter": hub.Cursor(req.scope, expired.Oldest-1)}})
			return
		}
		if err != nil {
			h.writeError(w, r, storeUnavailable(err))
			return
		}
		for _, e := range p.Entries {
			page.entries = append(page.entries, e.Event)
		}
		if p.Reached == page.reached {
			break // the end of the log
		}
		page.reached = p.Reached
	}
	next := hub.Cursor(req.scope, page.reached)
	size := len(eventListPrefix) + len(eventListMiddle) + len(next) + 3
	for _, ev := range page.entries {
		size += len(ev.JSON) + 1
	}
	buf := make([]byte, 0, size)
	buf = append(buf, eventListPrefix...)
	for i, ev := range page.entries {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, ev.JSON...)
	}
	buf = append(buf, eventListMiddle...)
	buf = strconv.AppendQuote(buf, next)
	buf = append(buf, '}')
	writeRawJSON(w, http.StatusOK, buf)
}

// storeUnavailable keeps a runtime error as it is and makes a store failure UNAVAILABLE.
func storeUnavailable(err error) error {
	var be *backend.Error
	if errors.As(err, &be) {
		return err
	}
	return &backend.Error{Code: backend.CodeUnavailable, Message: "The event log cannot be read now; try again"}
}

// maxEmptyReads bounds the reads of the log one JSON page makes while they find nothing its
// filters keep (each examines at most 16 pages' worth of entries).
const maxEmptyReads = 16

// logPageDefault is a JSON page's size when neither the request nor the server bounds it: a
// log can be long, and a page of everything is never what a client of a stream wants.
const logPageDefault = 1000

// parseStreamRequest validates the query and the cursor, in the order the execution's events
// operation does (the cursor, the page size), then the filters. Every query parameter must be
// known: a misspelt filter would otherwise widen the stream silently.
func (h *Handler) parseStreamRequest(r *http.Request, hub *streams.Hub, scope streams.Scope, tenantStream bool) (streamRequest, error) {
	req := streamRequest{scope: scope}
	query, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return req, invalidParameter("The query string is malformed", "", "not application/x-www-form-urlencoded")
	}
	// Which names, how often and whether empty: checked by the router (query.go, streamParams).
	after, present := "", false
	if v, ok := query["after"]; ok && len(v) > 0 && v[0] != "" {
		after, present = v[0], true
	}
	if present {
		if req.after, err = hub.ParseCursor(scope, after); err != nil {
			return req, invalidParameter(msgStreamAfter, "after", cursorReason(err))
		}
	}
	if ids := r.Header.Values("Last-Event-ID"); len(ids) > 0 && ids[0] != "" {
		if req.after, err = hub.ParseCursor(scope, ids[0]); err != nil {
			return req, invalidHeader(msgStreamLastEventID, "Last-Event-ID", cursorReason(err))
		}
		present, req.afterHeader = true, true
	}
	req.fromNow = !present && tenantStream

	if req.limit, err = h.pageSize(r); err != nil {
		return req, err
	}
	if req.limit == 0 {
		req.limit = logPageDefault
	}

	req.filter.Tenant = scope.Tenant
	for _, t := range listValues(query["type"]) {
		typ := api.StandardEventType(t)
		if !typ.Valid() {
			return req, invalidParameter(msgInvalidType, "type", "unknown event type "+strconv.Quote(t))
		}
		req.filter.Types = append(req.filter.Types, typ)
	}
	if v, ok := query["lifecycle"]; ok {
		switch v[0] {
		case "true":
			req.filter.LifecycleOnly = true
		case "false", "":
		default:
			return req, invalidParameter(msgInvalidLifecycle, "lifecycle", "must be true or false")
		}
	}
	if v, ok := query["provider"]; ok {
		req.filter.Providers = listValues(v)
		if len(req.filter.Providers) == 0 {
			return req, invalidParameter(msgInvalidProvider, "provider", "must name at least one provider")
		}
	}
	if v, ok := query["conversation"]; ok {
		if len(v) != 1 || v[0] == "" {
			return req, invalidParameter(msgInvalidStreamConv, "conversation", "one non-empty conversation id")
		}
		req.filter.ConversationID = v[0]
	}
	return req, nil
}

func cursorReason(err error) string {
	if errors.Is(err, streams.ErrForeignCursor) {
		return reasonForeignCursor
	}
	return reasonMalformedCursor
}

// listValues splits repeated and comma-separated values, dropping empty items.
func listValues(values []string) []string {
	var out []string
	for _, v := range values {
		for item := range strings.SplitSeq(v, ",") {
			if item != "" {
				out = append(out, item)
			}
		}
	}
	return out
}
