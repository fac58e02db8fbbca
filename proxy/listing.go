package proxy

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// listExecutions serves the listing extension: GET /v1/executions and, with conversationID,
// GET /v1/conversations/{id}/executions. The query is parsed here; the runtime validates it
// (states, cursor, limit range) and owns the messages; the details naming the parameter are
// added here (listParameterError).
func (h *Handler) listExecutions(w http.ResponseWriter, r *http.Request, conversationID string) {
	filter, err := listFilter(r.URL.RawQuery)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	filter.ConversationID = conversationID
	page, err := h.rt.ListExecutions(r.Context(), filter)
	if err != nil {
		h.writeError(w, r, listParameterError(err, filter))
		return
	}
	list := api.ExecutionList{Executions: page.Executions}
	if list.Executions == nil {
		list.Executions = []api.Execution{} // [] on the wire, never null
	}
	if page.NextCursor != "" {
		list.NextCursor = &page.NextCursor
	}
	writeJSON(w, http.StatusOK, list)
}

// listFilter reads state (repeatable, and comma-separated; empty items ignored), after and
// limit (absent or empty: the default) from a raw query.
func listFilter(rawQuery string) (backend.ExecutionFilter, error) {
	var f backend.ExecutionFilter
	states, ok := queryValues(rawQuery, "state")
	if !ok {
		return f, invalidListParameter("state", "")
	}
	for _, v := range states {
		for item := range strings.SplitSeq(v, ",") {
			if item != "" {
				f.States = append(f.States, api.ExecutionState(item))
			}
		}
	}
	after, _, ok := queryParam(rawQuery, "after")
	if !ok {
		return f, invalidListParameter("after", "")
	}
	f.After = after
	limit, _, ok := queryParam(rawQuery, "limit")
	if !ok {
		return f, invalidListParameter("limit", "")
	}
	if limit != "" {
		n, ok := parseLimit(limit)
		if !ok || n > backend.MaxListLimit {
			return f, invalidListParameter("limit", "")
		}
		f.Limit = n
	}
	return f, nil
}

// listParameterError names the query parameter of a listing filter the runtime refused; any
// other error is returned as it is.
func listParameterError(err error, f backend.ExecutionFilter) error {
	switch {
	case errors.Is(err, backend.ErrListState):
		for _, s := range f.States {
			if !s.Valid() {
				return invalidListParameter("state", string(s))
			}
		}
		return invalidListParameter("state", "")
	case errors.Is(err, backend.ErrListAfter):
		return invalidListParameter("after", "")
	case errors.Is(err, backend.ErrListLimit):
		return invalidListParameter("limit", "")
	}
	return err
}

// invalidListParameter is the VALIDATION_ERROR for the listing parameter name ("state",
// "after" or "limit") with the runtime's message; value is the offending state, for the reason.
func invalidListParameter(name, value string) *backend.Error {
	switch name {
	case "state":
		return invalidParameter(backend.ErrListState.Message, name, "unknown state "+quote(value))
	case "after":
		return invalidParameter(backend.ErrListAfter.Message, name, "not a nextCursor of this server")
	default:
		return invalidParameter(backend.ErrListLimit.Message, name, "must be an integer from 1 to 200")
	}
}

func quote(s string) string {
	const max = 64 // a reason is for people; never echo a whole query back
	if len(s) > max {
		s = s[:max] + "…"
	}
	return `"` + strings.ToValidUTF8(s, "�") + `"`
}

// queryValues is every value of name in a raw query, in order; ok is false when one of them
// cannot be unescaped (url.ParseQuery would drop it silently).
func queryValues(rawQuery, name string) (values []string, ok bool) {
	for rawQuery != "" {
		var pair string
		pair, rawQuery, _ = strings.Cut(rawQuery, "&")
		key, val, _ := strings.Cut(pair, "=")
		if k, err := url.QueryUnescape(key); err == nil {
			key = k
		}
		if key != name {
			continue
		}
		v, err := url.QueryUnescape(val)
		if err != nil {
			return nil, false
		}
		values = append(values, v)
	}
	return values, true
}
