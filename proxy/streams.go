package proxy

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The conversation and tenant streams (extension; docs/protocol.md, "Conversation and tenant
// streams"): GET /v1/conversations/{id}/events and GET /v1/events, a JSON page or an SSE
// stream as the execution's events operation, opened by the runtime (backend.OpenStream). The
// SSE side shares its frames across the streams of a scope (streams_frames.go).

const (
	msgStreamAfter       = "after must be a cursor of this stream"
	msgStreamLastEventID = "Last-Event-ID must be a cursor of this stream"
	msgUnknownFilter     = "Unknown query parameter"
	msgInvalidType       = "type must list event types"
	msgInvalidLifecycle  = "lifecycle must be true or false"
	msgInvalidProvider   = "provider must list provider ids"
	msgInvalidStreamConv = "conversation must be a conversation id"
)

// conversationEvents serves GET /v1/conversations/{id}/events.
func (h *Handler) conversationEvents(w http.ResponseWriter, r *http.Request, conversationID string) {
	h.serveLog(w, r, backend.StreamRequest{ConversationID: conversationID})
}

// tenantEvents serves GET /v1/events.
func (h *Handler) tenantEvents(w http.ResponseWriter, r *http.Request) {
	h.serveLog(w, r, backend.StreamRequest{})
}

// serveLog opens the stream req names with the request's cursors and filters, and answers it:
// JSON or SSE by the Accept header. The runtime checks the request, in the protocol's order
// (backend.OpenStream); the errors naming a cursor are given their parameter or header here.
func (h *Handler) serveLog(w http.ResponseWriter, r *http.Request, req backend.StreamRequest) {
	limit := h.parseStreamRequest(r, &req)
	req.Page = r.Method == http.MethodHead || !wantsEventStream(r.Header)
	st, err := h.rt.OpenStream(r.Context(), req)
	if errors.Is(err, backend.ErrNoStreamLog) {
		routeNotFound(w, r)
		return
	}
	var ce *backend.CursorError
	switch {
	case errors.As(err, &ce) && ce.InLastEventID:
		h.writeError(w, r, invalidHeader(msgStreamLastEventID, "Last-Event-ID", ce.Reason))
		return
	case ce != nil:
		h.writeError(w, r, invalidParameter(msgStreamAfter, "after", ce.Reason))
		return
	case err != nil:
		h.writeError(w, r, err)
		return
	}
	if !req.Page {
		h.serveStream(w, r, streamFeed{st, &h.frames})
		return
	}
	h.replayLog(w, r, st, limit)
}

// replayLog answers a StreamEventList: the stored event bytes, as the execution replay does.
func (h *Handler) replayLog(w http.ResponseWriter, r *http.Request, st *backend.Stream, limit int) {
	entries, next, err := st.Page(limit)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	size := len(eventListPrefix) + len(eventListMiddle) + len(next) + len(deletionsMember) + 4
	for _, ev := range entries {
		size += len(ev.JSON) + 1
	}
	buf := make([]byte, 0, size)
	buf = append(buf, eventListPrefix...)
	var deletions [][]byte // a deleted conversation's marker is not an event: it has a list of its own
	first := true
	for _, ev := range entries {
		if ev.Type == backend.ConversationDeletedEventType {
			deletions = append(deletions, ev.JSON)
			continue
		}
		if !first {
			buf = append(buf, ',')
		}
		first = false
		buf = append(buf, ev.JSON...)
	}
	buf = append(buf, eventListMiddle...)
	buf = strconv.AppendQuote(buf, next)
	if len(deletions) > 0 {
		buf = append(buf, deletionsMember...)
		for i, d := range deletions {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, d...)
		}
		buf = append(buf, ']')
	}
	buf = append(buf, '}')
	writeRawJSON(w, http.StatusOK, buf)
}

// deletionsMember opens a page's list of deleted conversations (StreamEventList.deletions).
const deletionsMember = `,"deletions":[`

// logPageDefault is a JSON page's size when neither the request nor the server bounds it: a
// log can be long, and a page of everything is never what a client of a stream wants.
const logPageDefault = 1000

// parseStreamRequest reads the cursors into req (the runtime checks them first), then the page
// size and the filters, in the order the execution's events operation checks them (the cursor,
// the page size), so that the first refusal among these is the one answered
// (backend.StreamRequest.Invalid). Every query parameter must be known: a misspelt filter would
// otherwise widen the stream silently.
func (h *Handler) parseStreamRequest(r *http.Request, req *backend.StreamRequest) (limit int) {
	query, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		req.Invalid = invalidParameter("The query string is malformed", "", "not application/x-www-form-urlencoded")
		return 0
	}
	// Which names, how often and whether empty: checked by the router (query.go, streamParams).
	if v, ok := query["after"]; ok && len(v) > 0 {
		req.Cursor = v[0]
	}
	if ids := r.Header[headerLastEventID]; len(ids) > 0 {
		req.LastEventID = ids[0]
	}
	if limit, req.Invalid = h.pageSize(r); req.Invalid != nil {
		return 0
	}
	if limit == 0 {
		limit = logPageDefault
	}
	req.Invalid = parseStreamFilter(query, &req.Filter)
	return limit
}

// parseStreamFilter reads the filters of a stream's query.
func parseStreamFilter(query url.Values, f *backend.StreamFilter) error {
	for _, t := range listValues(query["type"]) {
		typ := api.StandardEventType(t)
		if !typ.Valid() {
			return invalidParameter(msgInvalidType, "type", "unknown event type "+strconv.Quote(t))
		}
		f.Types = append(f.Types, typ)
	}
	if v, ok := query["lifecycle"]; ok {
		switch v[0] {
		case "true":
			f.LifecycleOnly = true
		case "false", "":
		default:
			return invalidParameter(msgInvalidLifecycle, "lifecycle", "must be true or false")
		}
	}
	if v, ok := query["provider"]; ok {
		f.Providers = listValues(v)
		if len(f.Providers) == 0 {
			return invalidParameter(msgInvalidProvider, "provider", "must name at least one provider")
		}
	}
	if v, ok := query["conversation"]; ok {
		if len(v) != 1 || v[0] == "" {
			return invalidParameter(msgInvalidStreamConv, "conversation", "one non-empty conversation id")
		}
		f.ConversationID = v[0]
	}
	return nil
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
