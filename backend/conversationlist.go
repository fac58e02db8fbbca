package backend

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The conversations listing is an extension (docs/protocol.md §15.11): a chat's sidebar, the
// most recently active conversation first. There is no index by last activity in either
// store: a page walks the tenant's conversations, reads the activity of those that pass the
// metadata filter (one read for all, an index seek each), then sorts. That is linear in the
// tenant's conversations per page; docs/protocol.md §15.11 gives the figures and the index
// that would remove it.

// The listing's VALIDATION_ERRORs beyond ErrListLimit and ErrListAfter, which it shares with
// ListExecutions.
var (
	ErrListActiveTime    = &Error{Code: CodeValidation, Message: "activeAfter and activeBefore must be timestamps such as 2026-12-03T15:04:05.000Z"}
	ErrListMetadataValue = &Error{Code: CodeValidation, Message: "metadataValue needs metadataKey, a non-empty key"}
)

// PreviewRunes is how much of an input or an output a listing shows.
const PreviewRunes = 120

// ConversationFilter selects what ListConversations returns. The zero value is the
// DefaultListLimit most recently active conversations of the caller's tenant.
type ConversationFilter struct {
	// MetadataKey keeps conversations whose metadata has this top-level key; with
	// MetadataValue, only those whose value there is that string.
	MetadataKey   string
	MetadataValue *string
	// ActiveAfter and ActiveBefore keep conversations last active at or after / before these
	// times (zero: no bound).
	ActiveAfter, ActiveBefore time.Time
	// After is the NextCursor of the previous page; Limit as ExecutionFilter's.
	After string
	Limit int
}

// ConversationPage is one page of the listing, most recently active first (lastActivityAt
// descending, then id descending). A conversation that becomes active while a client pages
// moves to the front: it is on a new first page, not on a later one.
type ConversationPage struct {
	Conversations []api.ConversationSummary
	NextCursor    string
}

// ListConversations returns a page of the caller's tenant's conversations.
func (r *Runtime) ListConversations(ctx context.Context, f ConversationFilter) (ConversationPage, error) {
	if err := ctx.Err(); err != nil {
		return ConversationPage{}, err
	}
	if err := r.checkOpen(); err != nil {
		return ConversationPage{}, err
	}
	limit, after, err := conversationPaging(f)
	if err != nil {
		return ConversationPage{}, err
	}
	tenant := TenantFrom(ctx).ID
	type entry struct {
		pos     store.ListPosition
		summary api.ConversationSummary
	}
	// The walk only collects: an activity read inside it would nest a read transaction in
	// another (bbolt) or hold two connections (PostgreSQL).
	var matching []store.Conversation
	err = r.store.ForEachConversation(tenant, func(c store.Conversation) bool {
		if metadataMatches(c.Metadata, f) {
			matching = append(matching, c)
		}
		return true
	}, func(id string, err error) { r.damage.report(DamagedConversation, id, err) })
	if err != nil {
		return ConversationPage{}, internalError("list conversations", err)
	}
	ids := make([]string, len(matching))
	for i, c := range matching {
		ids[i] = c.ID
	}
	activity, err := r.store.ConversationActivity(tenant, ids)
	if err != nil {
		return ConversationPage{}, internalError("read conversation activity", err)
	}
	entries := make([]entry, 0, len(matching))
	for _, c := range matching {
		s, pos := summarize(c, activity[c.ID])
		if active := time.UnixMilli(int64(pos.CreatedMs)); (!f.ActiveAfter.IsZero() && active.Before(f.ActiveAfter)) ||
			(!f.ActiveBefore.IsZero() && !active.Before(f.ActiveBefore)) {
			continue
		}
		if after == nil || pos.Before(*after) {
			entries = append(entries, entry{pos, s})
		}
	}
	slices.SortFunc(entries, func(a, b entry) int { // newest activity first
		switch {
		case b.pos.Before(a.pos):
			return -1
		case a.pos.Before(b.pos):
			return 1
		}
		return 0
	})
	page := ConversationPage{Conversations: []api.ConversationSummary{}}
	for i, e := range entries {
		if i == limit {
			page.NextCursor = listCursor(entries[i-1].pos)
			break
		}
		page.Conversations = append(page.Conversations, e.summary)
	}
	return page, nil
}

// conversationPaging validates f's limit, cursor and metadata filter.
func conversationPaging(f ConversationFilter) (limit int, after *store.ListPosition, err error) {
	limit = f.Limit
	if limit == 0 {
		limit = DefaultListLimit
	}
	if limit < 1 || limit > MaxListLimit {
		return 0, nil, ErrListLimit
	}
	if f.MetadataValue != nil && f.MetadataKey == "" {
		return 0, nil, ErrListMetadataValue
	}
	if f.After != "" {
		pos, ok := parseListCursor(f.After)
		if !ok {
			return 0, nil, ErrListAfter
		}
		after = &pos
	}
	return limit, after, nil
}

func metadataMatches(m api.JSONObject, f ConversationFilter) bool {
	if f.MetadataKey == "" {
		return true
	}
	v, ok := m[f.MetadataKey]
	if !ok {
		return false
	}
	if f.MetadataValue == nil {
		return true
	}
	s, isString := v.(string)
	return isString && s == *f.MetadataValue
}

// summarize is c as listed, and its place in the order: its last activity is the later of
// its creation and its newest execution's updatedAt (a rename is not activity).
func summarize(c store.Conversation, a store.ConversationActivity) (api.ConversationSummary, store.ListPosition) {
	s := api.ConversationSummary{
		ID: c.ID, Title: clonePtr(c.Title), CreatedAt: c.CreatedAt, Metadata: deepCopyObject(c.Metadata),
		BusyPolicy: clonePtr(c.BusyPolicy), ExecutionCount: a.Executions, LastActivityAt: c.CreatedAt,
	}
	if s.Metadata == nil {
		s.Metadata = api.JSONObject{}
	}
	if a.Latest != nil {
		e := a.Latest.Execution
		s.LatestExecution = &api.ConversationLatestExecution{ID: e.ID, State: e.State, InputPreview: preview(e.Input)}
		if e.FinalOutput != nil {
			out := preview(*e.FinalOutput)
			s.LatestExecution.OutputPreview = &out
		}
		if e.UpdatedAt > s.LastActivityAt { // one layout, fixed width: strings order as times
			s.LastActivityAt = e.UpdatedAt
		}
	}
	pos := store.ListPosition{ID: c.ID}
	if t, err := time.Parse(time.RFC3339Nano, s.LastActivityAt); err == nil && t.UnixMilli() > 0 {
		pos.CreatedMs = uint64(t.UnixMilli())
	}
	return s, pos
}

// preview is the first PreviewRunes characters of s, an ellipsis ending a cut one.
func preview(s string) string {
	if utf8.RuneCountInString(s) <= PreviewRunes {
		return s
	}
	var b strings.Builder
	for i, r := range []rune(s) {
		if i == PreviewRunes {
			break
		}
		b.WriteRune(r)
	}
	return b.String() + "…"
}
