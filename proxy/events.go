package proxy

import (
	"net/http"
)

const (
	reasonSequence = "must be a sequence: decimal digits, at most 9007199254740991"
	reasonPageSize = "must be an integer of at least 1"
)

// headerLastEventID is Last-Event-ID in the canonical form net/http stores received headers
// under: looked up directly, without Header.Values canonicalising "Last-Event-ID" (an
// allocation per lookup, two per stream request).
const headerLastEventID = "Last-Event-Id"

// listOrStreamEvents serves GET /v1/executions/{id}/events: a JSON replay, or an SSE stream
// when Accept lists text/event-stream. The cursor and the page size are validated, in both forms
// and in this order, before the execution is looked up, so a bad cursor on an unknown execution
// is a 400, as in the reference. HEAD always takes the JSON path: a stream has no length to announce.
func (h *Handler) listOrStreamEvents(w http.ResponseWriter, r *http.Request, executionID string) {
	cursor, err := eventCursor(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	// `limit` is validated for a stream too, although a stream has no pages: the same URL must
	// not be a 400 as JSON and a 200 as SSE.
	limit, err := h.pageSize(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if r.Method != http.MethodHead && wantsEventStream(r.Header) {
		h.streamEvents(w, r, executionID, cursor, isReconnect(r))
		return
	}
	h.replayEvents(w, r, executionID, cursor, limit)
}

// eventCursor is the position to read after: the Last-Event-ID header when present and not
// empty, else the `after` query parameter, else 0. Both must be plain decimal sequences. The
// header wins because a reconnecting SSE client keeps its first URL (and its `after`) while it
// sends the fresher position in the header. `after` is validated even then: a malformed URL is
// malformed whatever the header says.
func eventCursor(r *http.Request) (int64, error) {
	after, _, valid := queryParam(r.URL.RawQuery, "after")
	cursor, ok := parseCursor(after)
	if !valid || !ok {
		return 0, invalidParameter(msgInvalidAfter, "after", reasonSequence)
	}
	if ids := r.Header[headerLastEventID]; len(ids) > 0 && ids[0] != "" {
		fromHeader, ok := parseCursor(ids[0])
		if !ok {
			return 0, invalidHeader(msgInvalidLastEventID, "Last-Event-ID", reasonSequence)
		}
		cursor = fromHeader
	}
	return cursor, nil
}

// isReconnect reports whether an event-stream request is an EventSource's reconnect: it carries
// a non-empty Last-Event-ID. Only a reconnect to a finished stream is answered 204 (see
// streamEvents); a first request with ?after= keeps its 200, which the reference's TypeScript
// SDK (streamEvents(id, {after})) needs: it throws on a body-less 204.
func isReconnect(r *http.Request) bool {
	ids := r.Header[headerLastEventID]
	return len(ids) > 0 && ids[0] != ""
}

// pageSize is the most events one JSON replay returns: the `limit` query parameter, capped by
// Options.MaxPageSize; without `limit`, MaxPageSize (0 = everything, as in the reference).
func (h *Handler) pageSize(r *http.Request) (int, error) {
	limit := 0
	raw, present, valid := queryParam(r.URL.RawQuery, "limit")
	if !valid {
		return 0, invalidParameter(msgInvalidLimit, "limit", reasonPageSize)
	}
	if present && raw != "" {
		n, ok := parseLimit(raw)
		if !ok {
			return 0, invalidParameter(msgInvalidLimit, "limit", reasonPageSize)
		}
		limit = n
	}
	if max := h.opts.MaxPageSize; max > 0 && (limit == 0 || limit > max) {
		limit = max
	}
	return limit, nil
}
