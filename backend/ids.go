package backend

import (
	"crypto/rand"
	"encoding/hex"
	"sync/atomic"
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Identifier prefixes of docs/protocol.md §1.3.
const (
	conversationIDPrefix = "conv_"
	executionIDPrefix    = "exec_"
	actionIDPrefix       = "action_"
	ruleIDPrefix         = "rule_" // a standing rule (approvals)
)

// newID returns prefix + 32 lowercase hex characters from crypto/rand: the same shape as the
// reference's dash-less v4 UUIDs, and unguessable, since ids are the only thing standing between
// a caller and someone else's execution.
func newID(prefix string) string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand panics instead of returning an error since Go 1.24)
	return prefix + hex.EncodeToString(b[:])
}

// newConversationID is newExecutionID's layout for conversations: an execution's idempotency
// record and its by-conversation index entry are keyed by its conversation first, so ordered
// conversation ids keep the keys of new conversations together at the right edge of those
// trees too (the bbolt store's journal folds fewer pages, PostgreSQL's indexes append).
func newConversationID() string { return newTimeOrderedID(conversationIDPrefix) }

// newExecutionID returns "exec_" + 32 lowercase hex characters like newID, but time-ordered:
// the first 12 hex characters are the creation time in milliseconds since the Unix epoch
// (big-endian), the next 4 a sequence within the millisecond (idSequence), the last 16 come from
// crypto/rand (64 bits, and the sequence starts at a random point: still unguessable). Execution ids
// prefix every key of the store's executions, events and artifacts buckets, so ordered ids make
// new executions' keys land at the right edge of the B+trees: a commit dirties a few adjacent
// pages instead of one random page per execution, and pages fill up instead of splitting in
// half. (The same layout as a UUIDv7 without the version bits; the protocol only fixes the
// shape, docs/protocol.md §1.3.)
func newExecutionID() string { return newTimeOrderedID(executionIDPrefix) }

func newTimeOrderedID(prefix string) string {
	var b [16]byte
	v := nextIDStamp(uint64(time.Now().UnixMilli()))
	for i := 7; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	rand.Read(b[8:])
	if len(prefix) > 16 {
		return prefix + hex.EncodeToString(b[:])
	}
	// One allocation, the string: the prefix and the hex digits are written side by side.
	var out [16 + 2*len(b)]byte
	n := copy(out[:], prefix)
	n += hex.Encode(out[n:], b[:])
	return string(out[:n])
}

// idSequence is the millisecond and the sequence within it of the last time-ordered id made
// by this process: ms<<16 | sequence. Ids made in one millisecond sort in the order they were
// made — listings order by creation time, then id, so that executions accepted in one
// millisecond (a conversation's queue, its waitingFor) are listed in arrival order, not by a
// random part. A new millisecond starts its sequence at a random point below 2^15; a clock that
// steps back, or a full sequence, carries on from the last stamp (still increasing).
var idSequence atomic.Uint64

func nextIDStamp(ms uint64) uint64 {
	for {
		last := idSequence.Load()
		next := last + 1
		if ms > last>>16 {
			var r [2]byte
			rand.Read(r[:])
			next = ms<<16 | uint64(r[0]&0x7f)<<8 | uint64(r[1])
		}
		if idSequence.CompareAndSwap(last, next) {
			return next
		}
	}
}

// timestampLayout is JavaScript's toISOString: UTC, exactly three fractional digits, "Z".
const timestampLayout = "2006-01-02T15:04:05.000Z"

func formatTimestamp(t time.Time) api.Timestamp {
	return t.UTC().Format(timestampLayout)
}

func parseTimestamp(s api.Timestamp) (time.Time, error) {
	return time.Parse(timestampLayout, s)
}

// now is the current time as the protocol writes it. Every change of an execution is stamped,
// several per execution: a busy runtime asks many times within one millisecond, so the text of
// the last millisecond asked for is kept and handed out again (formatting allocates).
func now() api.Timestamp {
	t := time.Now()
	ms := t.UnixMilli()
	if s := lastStamp.Load(); s != nil && s.ms == ms {
		return s.text
	}
	s := &stamp{ms: ms, text: formatTimestamp(t)}
	lastStamp.Store(s)
	return s.text
}

// stamp is a millisecond and its text (now).
type stamp struct {
	ms   int64
	text api.Timestamp
}

var lastStamp atomic.Pointer[stamp]

// providerStateKey is the store key of a provider's state (Run.SaveState): its id and its own
// key, NUL-separated.
func providerStateKey(providerID, key string) string { return providerID + "\x00" + key }
