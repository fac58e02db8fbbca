package proxy

import (
	"errors"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The conversations listing, update and deletion are extensions (docs/protocol.md §15,
// "Conversations"): GET /v1/conversations, PATCH and DELETE /v1/conversations/{id}.

const msgInvalidConversationUpdate = "Invalid conversation update"

// conversationListParams is what GET /v1/conversations takes (checked by checkQuery: an
// unknown parameter is a VALIDATION_ERROR naming it).
var conversationListParams = []param{
	{name: "after", message: backend.ErrListAfter.Message, empty: true},
	{name: "limit", message: backend.ErrListLimit.Message},
	{name: "metadataKey", message: backend.ErrListMetadataValue.Message},
	{name: "metadataValue", message: backend.ErrListMetadataValue.Message, empty: true},
	{name: "activeAfter", message: backend.ErrListActiveTime.Message},
	{name: "activeBefore", message: backend.ErrListActiveTime.Message},
}

func (h *Handler) listConversations(w http.ResponseWriter, r *http.Request) {
	f, err := conversationFilter(r.URL.RawQuery)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	page, err := h.rt.ListConversations(r.Context(), f)
	if err != nil {
		switch {
		case errors.Is(err, backend.ErrListAfter), errors.Is(err, backend.ErrListLimit):
			err = listParameterError(err, backend.ExecutionFilter{})
		case errors.Is(err, backend.ErrListMetadataValue):
			err = invalidParameter(backend.ErrListMetadataValue.Message, "metadataValue", "given without metadataKey")
		}
		h.writeError(w, r, err)
		return
	}
	list := api.ConversationList{Conversations: page.Conversations}
	if page.NextCursor != "" {
		list.NextCursor = &page.NextCursor
	}
	writeJSON(w, http.StatusOK, list)
}

// conversationFilter reads the listing's query; the runtime checks the limit's range, the
// cursor and the metadata pair.
func conversationFilter(rawQuery string) (backend.ConversationFilter, error) {
	var f backend.ConversationFilter
	get := func(name string) (string, bool, error) {
		v, present, ok := queryParam(rawQuery, name)
		if !ok {
			return "", false, invalidParameter(msgInvalidQuery, name, "not a valid query value")
		}
		return v, present, nil
	}
	after, _, err := get("after")
	if err != nil {
		return f, err
	}
	f.After = after
	limit, _, err := get("limit")
	if err != nil {
		return f, err
	}
	if limit != "" {
		n, ok := parseLimit(limit)
		if !ok || n > backend.MaxListLimit {
			return f, invalidListParameter("limit", "")
		}
		f.Limit = n
	}
	key, keyPresent, err := get("metadataKey")
	if err != nil {
		return f, err
	}
	if keyPresent && key == "" {
		return f, invalidParameter(backend.ErrListMetadataValue.Message, "metadataKey", "must not be empty")
	}
	f.MetadataKey = key
	value, valuePresent, err := get("metadataValue")
	if err != nil {
		return f, err
	}
	if valuePresent {
		f.MetadataValue = &value
	}
	for _, p := range []struct {
		name string
		to   *time.Time
	}{{"activeAfter", &f.ActiveAfter}, {"activeBefore", &f.ActiveBefore}} {
		v, present, err := get(p.name)
		if err != nil {
			return f, err
		}
		if !present {
			continue
		}
		t, perr := time.Parse(time.RFC3339Nano, v)
		if perr != nil {
			return f, invalidParameter(backend.ErrListActiveTime.Message, p.name, "not an RFC 3339 timestamp")
		}
		*p.to = t
	}
	return f, nil
}

func (h *Handler) updateConversation(w http.ResponseWriter, r *http.Request, id string) {
	body, err := readBody(w, r, h.opts.MaxBodyBytes)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	u, err := decodeConversationUpdate(body)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	conv, err := h.rt.UpdateConversation(r.Context(), id, u)
	if errors.Is(err, backend.ErrTitleTooLong) {
		err = invalidBodyField(msgInvalidConversationUpdate, "/title", backend.ErrTitleTooLong.Message)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, conv)
}

// decodeConversationUpdate decodes the required merge-patch body. Unlike the reference's
// requests, an unknown member is refused: a misspelt "titel" must not answer 200 and change
// nothing.
func decodeConversationUpdate(body []byte) (backend.ConversationUpdate, error) {
	var u backend.ConversationUpdate
	m, err := decodeObjectBody(body, true, msgInvalidConversationUpdate)
	if err != nil {
		return u, err
	}
	for _, name := range slices.Sorted(maps.Keys(m)) { // sorted: the same body, the same error
		raw := m[name]
		switch name {
		case "title":
			if string(raw) == "null" {
				u.Title = ptrTo("")
				continue
			}
			s, ok := stringValue(raw)
			if !ok {
				return u, invalidBodyField(msgInvalidConversationUpdate, "/title", "must be a string or null")
			}
			u.Title = &s
		case "metadata":
			if string(raw) == "null" {
				u.ClearMetadata = true
				continue
			}
			obj, ok := objectValue(raw)
			if !ok {
				return u, invalidBodyField(msgInvalidConversationUpdate, "/metadata", reasonObject+", or null")
			}
			u.Metadata = obj
		default:
			return u, invalidBodyField(msgInvalidConversationUpdate, "/"+name, "unknown member: a conversation update takes title and metadata")
		}
	}
	return u, nil
}

// conversationDeleteParams is what DELETE /v1/conversations/{id} takes: cancel=true asks to
// cancel the conversation's unfinished executions first.
var conversationDeleteParams = []param{{name: "cancel", message: msgInvalidCancelParam}}

const msgInvalidCancelParam = "Invalid cancel parameter"

// deleteConversation erases the conversation (backend.DeleteConversation) and answers its
// tombstone: 200 {conversationId, deletedAt, executions}.
func (h *Handler) deleteConversation(w http.ResponseWriter, r *http.Request, id string) {
	cancelFirst := false
	if v, present, ok := queryParam(r.URL.RawQuery, "cancel"); present || !ok {
		switch {
		case ok && v == "true":
			cancelFirst = true
		case ok && v == "false":
		default:
			h.writeError(w, r, invalidParameter(msgInvalidCancelParam, "cancel", "must be true or false"))
			return
		}
	}
	d, err := h.rt.DeleteConversation(r.Context(), id, cancelFirst)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

func ptrTo[T any](v T) *T { return &v }
