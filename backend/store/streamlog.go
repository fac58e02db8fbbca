package store

import (
	"errors"
	"time"
)

// The stream log: every committed event, numbered by the store in the transaction that writes
// it, so that the conversation and tenant streams (docs/protocol.md, "Conversation and tenant
// streams") see one order on every node and after every reconnect. Per-execution sequences stay
// what clients deduplicate by; a position only says where an event stands in the whole store.
// The log's entries are kept apart from the events' stored values: an entry names its event
// (execution, sequence) and the scope a stream selects it by, and reading one joins the event.

// StreamScope is what a conversation or tenant stream selects an event by: the execution's
// tenant, conversation and provider. The runtime sets it once per execution (StoredEvent.Scope)
// and every event of the execution shares it.
type StreamScope struct {
	Tenant         string
	ConversationID string
	ProviderID     string
}

// ScopeOf is the stream scope of an execution's events.
func ScopeOf(rec Execution) *StreamScope {
	return &StreamScope{Tenant: rec.Tenant, ConversationID: rec.Execution.ConversationID, ProviderID: rec.Execution.ProviderID}
}

// LogEntry is one committed event in the stream log.
type LogEntry struct {
	// Position is the entry's place in the log: 1, 2, 3, … in commit order, without gaps
	// (trimming removes only the oldest entries).
	Position    int64
	ExecutionID string
	Scope       StreamScope
	Event       Event // its sequence, type and wire JSON (shared, never modify)
	// Erased, when set, makes the entry an erasure's marker (erasure.go): ExecutionID and
	// Event are empty, Scope names the erased conversation's tenant and id.
	Erased *Tombstone
}

// LogQuery selects what ReadLog returns. The zero value reads every entry after 0.
type LogQuery struct {
	After int64 // entries with Position > After
	// ConversationID, when set, reads that conversation's entries only (through an index: a
	// seek, not a scan).
	ConversationID string
	// Tenant reads only that tenant's entries when AnyTenant is false.
	Tenant    string
	AnyTenant bool
	// Match, when set, is a further filter (provider, event types), applied after the scope.
	Match func(*LogEntry) bool
	// Limit bounds the entries returned (<= 0: DefaultLogPage).
	Limit int
	// Scan bounds the entries examined when filters skip most of them (<= 0: 16·Limit), so one
	// read of a narrow filter over a busy log stays short; Reached tells where it stopped.
	Scan int
}

// DefaultLogPage is the page of a log read when LogQuery.Limit is not set.
const DefaultLogPage = 512

// LogPage is what one ReadLog returns.
type LogPage struct {
	Entries []LogEntry
	// Reached is the position the read examined the log up to: the last entry returned, or
	// further when the filters skipped entries after it. A reader resumes after Reached. It is
	// never beyond what was committed when the read began, and it is After when nothing was.
	Reached int64
}

// ErrCursorExpired says a log read began before the oldest entry the log keeps: what came
// between is gone (trimmed by retention), and reading on would hide the gap.
var ErrCursorExpired = errors.New("the stream log no longer holds entries after this position")

// LogBounds are the ends of the log.
type LogBounds struct {
	// Oldest is the first position the log keeps: a read after Oldest-1 or later is complete,
	// one from before it fails with ErrCursorExpired. 1 when nothing was ever trimmed.
	Oldest int64
	// Last is the position of the last committed entry (0 when none).
	Last int64
}

// StreamLog is implemented by stores that keep the stream log (both of ours). The runtime
// checks for it with a type assertion; without it the conversation and tenant streams answer
// that the server does not offer them.
type StreamLog interface {
	// StreamLogID is the log's identity: random, made once when the log was created, kept
	// across restarts and shared by every node of a shared store. Cursors carry a tag derived
	// from it, so a cursor of another store is refused rather than misread.
	StreamLogID() string
	// ReadLog returns committed entries in position order (see LogQuery, LogPage). An entry
	// whose event is gone (its execution was deleted) is skipped. A read that begins before
	// the oldest kept entry fails with ErrCursorExpired.
	ReadLog(q LogQuery) (LogPage, error)
	// StreamLogBounds are the log's ends now.
	StreamLogBounds() (LogBounds, error)
	// ObserveLog makes fn be called after every commit that wrote entries, with those entries
	// in position order, on the commit goroutine, before the commit's Done callbacks: it must
	// be quick. Commits are observed in position order, so on a single-node store the observed
	// entries are the whole log, without a gap; on a shared store the entries of other nodes'
	// commits come between (read them with ReadLog). Called before anything is committed.
	ObserveLog(fn func([]LogEntry))
	// TrimLog removes the entries committed before the given time and returns the new bounds.
	TrimLog(before time.Time) (LogBounds, error)
}
