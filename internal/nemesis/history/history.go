// Package history holds the nemesis history format: one JSON object per
// line, written by harness-nemesis while it drives a cluster and read back by
// the checker (harness-nemesis check). The format is documented in
// docs/nemesis.md ("History format"); fields may be added, never renamed,
// because recorded histories must stay checkable.
package history

import (
	"encoding/json"
	"fmt"
	"time"
)

// Kind names what a line records.
type Kind string

// The line kinds. A history starts with one KindRun line.
const (
	KindRun     Kind = "run"
	KindRequest Kind = "request"
	KindEvent   Kind = "event"
	KindFault   Kind = "fault"
	KindFinal   Kind = "final"
)

// Header is on every line: what it records and when (the line's own moment:
// a request's completion, an event's receipt, a fault's start or end).
type Header struct {
	Kind Kind      `json:"kind"`
	T    time.Time `json:"t"`
}

// Duration is a time.Duration written as Go's duration string ("30s"), so a
// history reads the way the configuration does.
type Duration time.Duration

// MarshalJSON writes the duration as a string such as "1m30s".
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string; a bare number is nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err2 := json.Unmarshal(b, &n); err2 != nil {
			return fmt.Errorf("duration: want a string such as \"30s\": %w", err)
		}
		*d = Duration(n)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Std returns the duration as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// Settings are the bounds the checker holds the run to; the run writes what
// it configured so a history is checkable on its own.
type Settings struct {
	// CancelBound: every :cancel must be answered within it.
	CancelBound Duration `json:"cancelBound,omitempty"`
	// RespondBound: every approval respond must be answered within it.
	RespondBound Duration `json:"respondBound,omitempty"`
	// MaxRunning is the handler's max_running (0: no bound).
	MaxRunning int `json:"maxRunning,omitempty"`
	// QuietPeriod is how long the run waited, faults stopped, before the
	// final reads.
	QuietPeriod Duration `json:"quietPeriod,omitempty"`
	// Tenants the clients act as.
	Tenants []string `json:"tenants,omitempty"`
	// Budgets per tenant (docs/usage.md "The bound").
	Budgets []Budget `json:"budgets,omitempty"`
	// RequestTimeout is a client's timeout on one request; the final read
	// comes after the quiet period, which exceeds leases plus timeouts.
	RequestTimeout Duration `json:"requestTimeout,omitempty"`
	// FalseTakeovers is "violation" (the default: issue 44's overload fix
	// holds) or "count" (report them without failing the run).
	FalseTakeovers string `json:"falseTakeovers,omitempty"`
}

// Budget is one tenant's token budget: spent must stay within Tokens plus
// Slack (docs/usage.md: the limit plus one usage report of each running
// execution that crossed it; the run states the slack it allows).
type Budget struct {
	Tenant string `json:"tenant"`
	Tokens int64  `json:"tokens"`
	Slack  int64  `json:"slack,omitempty"`
}

// Run is the first line: what was run, from which seed.
type Run struct {
	Header
	Seed     int64    `json:"seed"`
	Store    string   `json:"store"`
	Nodes    []string `json:"nodes"`
	Lease    Duration `json:"lease"`
	Settings Settings `json:"settings"`
	// Command replays the schedule (written by the run, printed on failure).
	Command string `json:"command,omitempty"`
}

// Request is one client request, written when it completed (or gave up).
type Request struct {
	Header
	ID             int64           `json:"id"`
	Client         string          `json:"client"`
	Node           string          `json:"node"`
	Op             string          `json:"op"`
	Method         string          `json:"method"`
	Path           string          `json:"path"`
	Tenant         string          `json:"tenant,omitempty"`
	IdempotencyKey string          `json:"idempotencyKey,omitempty"`
	Body           json.RawMessage `json:"body,omitempty"`
	Invoke         time.Time       `json:"invoke"`
	Complete       time.Time       `json:"complete"`
	// Status is 0 when no answer came (transport error, timeout): Error says why.
	Status int             `json:"status"`
	Error  string          `json:"error,omitempty"`
	Answer json.RawMessage `json:"answer,omitempty"`
	// ExecutionID and ConversationID name what the request acted on, when the
	// client knew (the path carries them too; these save parsing it).
	ExecutionID    string `json:"executionId,omitempty"`
	ConversationID string `json:"conversationId,omitempty"`
	// Final marks the reads made after the quiet period (usage, lists).
	Final bool `json:"final,omitempty"`
}

// Answered reports whether the server answered at all.
func (r *Request) Answered() bool { return r.Status != 0 }

// OK reports a 2xx answer.
func (r *Request) OK() bool { return r.Status >= 200 && r.Status < 300 }

// The stream kinds an event arrives on.
const (
	StreamExecution    = "execution"
	StreamConversation = "conversation"
	StreamTenant       = "tenant"
)

// Event is one event received on a stream.
type Event struct {
	Header
	Stream string `json:"stream"`
	// Subscription identifies one GET (one connection); a resume is a new
	// subscription naming the one it resumed in ResumedFrom.
	Subscription string `json:"subscription"`
	ResumedFrom  string `json:"resumedFrom,omitempty"`
	// Scope is the execution id, conversation id or tenant streamed.
	Scope string `json:"scope"`
	// Filtered: the stream was asked for a subset of events (types), so
	// events are skipped on purpose.
	Filtered bool `json:"filtered,omitempty"`
	// After is the cursor the subscription was opened with (query `after`
	// or Last-Event-ID), empty when it started from the stream's default.
	After string `json:"after,omitempty"`
	// Opened is when the subscription's GET was sent (the same on each of its events): a
	// stream of a deleted conversation opened after the delete was acknowledged must answer
	// 404, and only this tells such a stream from one that was open before. Zero in histories
	// written before it was added.
	Opened      time.Time `json:"opened,omitzero"`
	Node        string    `json:"node"`
	Cursor      string    `json:"cursor,omitempty"`
	ExecutionID string    `json:"executionId"`
	Sequence    int64     `json:"sequence"`
	Type        string    `json:"type"`
	// Data is the SSE message's data: the whole RuntimeEvent as sent
	// (id, executionId, sequence, type, time, data).
	Data json.RawMessage `json:"data,omitempty"`
}

// The fault phases.
const (
	PhaseStart = "start"
	PhaseEnd   = "end"
)

// Fault is one fault's start or end.
type Fault struct {
	Header
	Fault  string `json:"fault"`
	Target string `json:"target"`
	Phase  string `json:"phase"`
	// Detail says more (a stall's length, a burst's size), for people.
	Detail string `json:"detail,omitempty"`
}

// Final is one execution's state read after the quiet period.
type Final struct {
	Header
	Node        string `json:"node"`
	ExecutionID string `json:"executionId"`
	// Status is the read's HTTP status (404: the node does not know the
	// execution; 0: the read got no answer, Error says why).
	Status         int             `json:"status,omitempty"`
	Error          string          `json:"error,omitempty"`
	State          string          `json:"state"`
	Snapshot       json.RawMessage `json:"snapshot,omitempty"`
	Tenant         string          `json:"tenant,omitempty"`
	ConversationID string          `json:"conversationId,omitempty"`
}

// RawJSON returns b when it is valid JSON, else b as a JSON string, so an
// answer that is not JSON (a proxy's HTML, a truncated body) is still kept.
func RawJSON(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	if json.Valid(b) {
		return json.RawMessage(append([]byte(nil), b...))
	}
	s, _ := json.Marshal(string(b))
	return s
}
