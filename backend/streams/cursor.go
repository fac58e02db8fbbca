package streams

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
)

// Cursors (docs/protocol.md, "Cursors"): what a stream puts in each message's id and what a
// client hands back in Last-Event-ID or ?after=. Opaque to clients. The form is
// "<tag>-<position>": the tag is 12 hex digits of a hash of the store log's identity and the
// stream's scope (a conversation, or a tenant), so a cursor of another conversation, another
// tenant's stream or another server's store is refused instead of being read as a position of
// this one; the position is the entry's, in decimal. "0" is the beginning of the log.

// Scope names what a cursor is valid for.
type Scope struct {
	// ConversationID set: a conversation's stream; else the tenant's stream.
	ConversationID string
	Tenant         string
}

// ConversationScope and TenantScope are the two kinds of stream.
func ConversationScope(tenant, conversationID string) Scope {
	return Scope{Tenant: tenant, ConversationID: conversationID}
}
func TenantScope(tenant string) Scope { return Scope{Tenant: tenant} }

// ErrBadCursor: malformed, or made for another scope or store.
var (
	ErrMalformedCursor = errors.New("not a stream cursor")
	ErrForeignCursor   = errors.New("a cursor of another stream or another server")
)

const tagLen = 12

// maxPosition keeps positions exact in JavaScript (Number.MAX_SAFE_INTEGER), as sequences are.
const maxPosition = 1<<53 - 1

func (h *Hub) tag(s Scope) string {
	sum := sha256.New()
	sum.Write([]byte(h.LogID()))
	if s.ConversationID != "" {
		sum.Write([]byte("\x00conversation\x00"))
		sum.Write([]byte(s.Tenant))
		sum.Write([]byte{0})
		sum.Write([]byte(s.ConversationID))
	} else {
		sum.Write([]byte("\x00tenant\x00"))
		sum.Write([]byte(s.Tenant))
	}
	return hex.EncodeToString(sum.Sum(nil))[:tagLen]
}

// Cursor is the cursor of position pos in scope s.
func (h *Hub) Cursor(s Scope, pos int64) string { return FormatCursor(h.CursorTag(s), pos) }

// CursorTag is the tag of scope s's cursors: a stream computes it once (a hash) and formats
// each message's cursor with FormatCursor.
func (h *Hub) CursorTag(s Scope) string { return h.tag(s) }

// FormatCursor is the cursor of position pos under tag.
func FormatCursor(tag string, pos int64) string {
	if pos == 0 {
		return "0"
	}
	return tag + "-" + strconv.FormatInt(pos, 10)
}

// ParseCursor is the position a cursor of scope s stands for.
func (h *Hub) ParseCursor(s Scope, cursor string) (int64, error) {
	if cursor == "0" {
		return 0, nil
	}
	tag, digits, ok := strings.Cut(cursor, "-")
	if !ok || len(tag) != tagLen || digits == "" || len(digits) > 16 || digits[0] == '0' {
		return 0, ErrMalformedCursor
	}
	for i := 0; i < len(tag); i++ {
		if c := tag[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return 0, ErrMalformedCursor
		}
	}
	pos, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || pos < 1 || pos > maxPosition || strconv.FormatInt(pos, 10) != digits {
		return 0, ErrMalformedCursor
	}
	if tag != h.tag(s) {
		return 0, ErrForeignCursor
	}
	return pos, nil
}
