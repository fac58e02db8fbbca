package backend

import (
	"encoding/base64"
	"encoding/binary"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Listing is a harness-edge extension (docs/protocol.md, "Extensions"): the reference has no
// way to find an execution again once its id is lost.

// Page sizes of ListExecutions.
const (
	DefaultListLimit = 50
	MaxListLimit     = 200
)

// The listing's VALIDATION_ERRORs, one for each ExecutionFilter field that can be wrong;
// errors.Is tells them apart. The HTTP binding gives each the same message when it refuses a
// query it cannot even parse, and names the query parameter in the details (proxy/listing.go).
var (
	ErrListState = &Error{Code: CodeValidation, Message: "state must be one of queued, starting, running, awaiting_input, awaiting_approval, cancelling, succeeded, failed, cancelled"}
	ErrListLimit = &Error{Code: CodeValidation, Message: "limit must be an integer from 1 to 200"}
	ErrListAfter = &Error{Code: CodeValidation, Message: "after must be a nextCursor returned by this listing"}
)

// ExecutionFilter selects what ListExecutions returns. The zero value is the newest
// DefaultListLimit executions of every conversation, in every state. A listing never leaves the
// caller's tenant (the context's, see WithTenant): another tenant's executions are not there.
type ExecutionFilter struct {
	// ConversationID restricts the listing to one conversation; an unknown one is NOT_FOUND.
	ConversationID string
	// States keeps executions in any of these states; empty keeps every state.
	States []api.ExecutionState
	// After is the NextCursor of the previous page; "" starts at the newest execution.
	After string
	// Limit is the most executions to return: 0 means DefaultListLimit, and anything outside
	// 1–MaxListLimit otherwise is a VALIDATION_ERROR.
	Limit int
}

// ExecutionPage is one page of a listing.
type ExecutionPage struct {
	// Executions are newest first: createdAt descending, then id descending.
	Executions []api.Execution
	// NextCursor is where the next page starts (pass it as ExecutionFilter.After); "" on the
	// last page.
	NextCursor string
}

// listQueryOf validates f into the query the store reads.
func listQueryOf(f ExecutionFilter) (store.ListQuery, error) {
	q := store.ListQuery{ConversationID: f.ConversationID, Limit: f.Limit}
	if q.Limit == 0 {
		q.Limit = DefaultListLimit
	}
	if q.Limit < 1 || q.Limit > MaxListLimit {
		return q, ErrListLimit
	}
	for _, s := range f.States {
		if !s.Valid() {
			return q, ErrListState
		}
		if q.States == nil {
			q.States = make(map[api.ExecutionState]bool, len(f.States))
		}
		q.States[s] = true
	}
	if f.After != "" {
		pos, ok := parseListCursor(f.After)
		if !ok {
			return q, ErrListAfter
		}
		q.After = &pos
	}
	return q, nil
}

// cursorVersion leads every cursor, so the encoding can change without misreading old ones.
const cursorVersion = 1

// listCursor encodes p as the opaque nextCursor: base64url (unpadded) of a version byte, the
// big-endian milliseconds and the id. It carries no secret and grants nothing: it only says
// where a page ends.
func listCursor(p store.ListPosition) string {
	raw := make([]byte, 0, 9+len(p.ID))
	raw = append(raw, cursorVersion)
	raw = binary.BigEndian.AppendUint64(raw, p.CreatedMs)
	raw = append(raw, p.ID...)
	return base64.RawURLEncoding.EncodeToString(raw)
}

// maxCursorIDBytes bounds the id in a cursor: ids are 37 bytes; anything much longer is not a
// cursor this server wrote.
const maxCursorIDBytes = 256

func parseListCursor(s string) (store.ListPosition, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) < 10 || len(raw) > 9+maxCursorIDBytes || raw[0] != cursorVersion {
		return store.ListPosition{}, false
	}
	ms := binary.BigEndian.Uint64(raw[1:9])
	if ms > uint64(time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC).UnixMilli()) {
		return store.ListPosition{}, false
	}
	id := string(raw[9:])
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x21 || c > 0x7e { // ids are printable ASCII
			return store.ListPosition{}, false
		}
	}
	return store.ListPosition{CreatedMs: ms, ID: id}, true
}
