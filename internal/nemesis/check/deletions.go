package check

import (
	"encoding/json"
	"net/url"
	"strings"
	"time"

	"github.com/harness-edge/harness-edge/internal/nemesis/history"
)

// What the history tells of a conversation's deletion (DELETE /v1/conversations/{id}, op
// "deleteConversation"; docs/protocol.md §15.12): the deletes sent, answered or not, the
// final reads of the conversation, and the conversation.deleted markers the streams carried.
// settleDeletions decides from them whether the conversation is gone; deletions_check.go holds
// what a delete promises.

// deletion is one conversation's part of the history.
type deletion struct {
	requests []*history.Request // every delete of it, in history order
	// acked is the first delete answered 2xx (the one that completed first), nil if none:
	// from its completion on every read of the conversation and its executions answers 404.
	acked *history.Request
	// maybe: a delete whose outcome the history cannot tell may have erased it — no answer or
	// a 5xx (the erasure may have committed before the answer was lost), or a 409 to one with
	// ?cancel=true (the conversation stays sealed, and a node that opens finishes the erasure).
	maybe bool
	// finals are the final reads of the conversation (op getConversation, final), markers the
	// conversation.deleted messages received for it.
	finals  []*history.Request
	markers []*history.Line
}

// addDeletionRequest records a delete of a conversation and a final read of one.
func (ix *index) addDeletionRequest(r *history.Request) {
	switch {
	case r.Op == "deleteConversation":
		id := conversationOf(r)
		if id == "" {
			return
		}
		d := &ix.conv(id).deletion
		d.requests = append(d.requests, r)
		switch {
		case r.OK():
			if d.acked == nil || r.Complete.Before(d.acked.Complete) {
				d.acked = r
			}
		case mayHaveErased(r):
			d.maybe = true
		}
	case r.Op == "getConversation" && r.Final:
		if id := conversationOf(r); id != "" {
			d := &ix.conv(id).deletion
			d.finals = append(d.finals, r)
		}
	}
}

// mayHaveErased reports a delete whose answer does not tell whether it erased the
// conversation (deletion.maybe).
func mayHaveErased(r *history.Request) bool {
	return !r.Answered() || r.Status >= 500 || (r.Status == 409 && cancelFirst(r))
}

// conversationOf is the conversation a request names: its conversationId, else its path's.
func conversationOf(r *history.Request) string {
	if r.ConversationID != "" {
		return r.ConversationID
	}
	const p = "/v1/conversations/"
	rest, ok := strings.CutPrefix(r.Path, p)
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		rest = rest[:i]
	}
	id, err := url.PathUnescape(rest)
	if err != nil {
		return ""
	}
	return id
}

// cancelFirst reports a delete sent with ?cancel=true.
func cancelFirst(r *history.Request) bool {
	_, query, _ := strings.Cut(r.Path, "?")
	q, err := url.ParseQuery(query)
	return err == nil && q.Get("cancel") == "true"
}

// markerData is a conversation.deleted message's data.
type markerData struct {
	Type           string `json:"type"`
	ConversationID string `json:"conversationId"`
}

// markedConversation is the conversation a conversation.deleted line names ("" for any other
// line).
func markedConversation(l *history.Line) string {
	if l.Event == nil || l.Event.Type != "conversation.deleted" {
		return ""
	}
	var d markerData
	if json.Unmarshal(l.Event.Data, &d) != nil {
		return ""
	}
	return d.ConversationID
}

// addDeletionMarker records a conversation.deleted message.
func (ix *index) addDeletionMarker(l *history.Line) {
	if id := markedConversation(l); id != "" {
		d := &ix.conv(id).deletion
		d.markers = append(d.markers, l)
	}
}

// settleDeletions decides, once every line is read, which conversations are gone: one a
// delete acknowledged, one a stream marked as deleted, and one a delete may have erased
// unless a final read still found it. deletedAt is when the first delete that may have erased
// it was sent: a 404 that completed before it is no deletion's doing.
func (ix *index) settleDeletions() {
	for _, c := range ix.conversations {
		d := &c.deletion
		found := false
		for _, r := range d.finals {
			found = found || r.OK()
		}
		c.deleted = d.acked != nil || len(d.markers) > 0 || (d.maybe && !found)
		if !c.deleted {
			continue
		}
		for _, r := range d.requests {
			if (r.OK() || mayHaveErased(r)) && (c.deletedAt.IsZero() || r.Invoke.Before(c.deletedAt)) {
				c.deletedAt = r.Invoke
			}
		}
	}
}

// goneBy reports whether execution x's conversation was deleted by a delete sent before t:
// a read of x that completed at t may have found it erased.
func (ix *index) goneBy(x *execution, t time.Time) bool {
	c := ix.conversations[x.conversation]
	return c != nil && c.deleted && !t.Before(c.deletedAt)
}
