// Package check holds a nemesis history to what the protocol promises: every
// acknowledged start exists once, streams are contiguous and end once,
// executions end, approvals have one winner, busy policies, budgets and usage
// totals hold, and each execution's observed states are linearizable
// (porcupine). Each broken promise is a Violation with a stable Name and the
// history lines that show it, so a test, a person and a shrinker can tell
// one failure from another.
package check

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/harness-edge/harness-edge/internal/nemesis/history"
)

// The violation names. They are part of the checker's interface (tests and
// docs/nemesis.md name them); add, never rename.
const (
	StartMissing          = "start-missing"
	IdempotencyDuplicate  = "idempotency-duplicate"
	RefusedStartExists    = "refused-start-exists"
	EventGap              = "event-gap"
	EventDuplicate        = "event-duplicate"
	EventOutOfOrder       = "event-out-of-order"
	EventMismatch         = "event-mismatch"
	TwoTerminalEvents     = "two-terminal-events"
	EventAfterTerminal    = "event-after-terminal"
	TerminalMismatch      = "terminal-mismatch"
	StartedTwice          = "started-twice"
	NotTerminal           = "not-terminal"
	FinalViewsDisagree    = "final-views-disagree"
	CancelUnbounded       = "cancel-unbounded"
	RespondUnbounded      = "respond-unbounded"
	TwoWinners            = "two-winners"
	ExpiryNotClosed       = "expiry-not-closed"
	ExpiryEarly           = "expiry-early"
	AnswerMisattributed   = "answer-misattributed"
	RejectTwoRunning      = "reject-two-running"
	EnqueueOutOfOrder     = "enqueue-out-of-order"
	EnqueueMissedTurn     = "enqueue-missed-predecessor"
	InterruptNotCancelled = "interrupt-predecessor-not-cancelled"
	MaxRunningExceeded    = "max-running-exceeded"
	BudgetExceeded        = "budget-exceeded"
	UsageSumMismatch      = "usage-sum-mismatch"
	StaleRead             = "stale-read"
	TerminalEventMissing  = "terminal-event-missing"
	FalseTakeover         = "false-takeover"
	MalformedHistory      = "malformed-history"
	// The deletion of a conversation (deletions.go).
	DeletedStillReadable = "deleted-still-readable"
	StartAfterDelete     = "start-after-delete"
	DeleteBusyWhileIdle  = "delete-busy-while-idle"
	EventAfterDeletion   = "event-after-deletion"
	DeletionUnasked      = "deletion-unasked"
	SealedWithoutDelete  = "sealed-without-delete"
)

// Violation is one broken promise.
type Violation struct {
	Name        string `json:"name"`
	ExecutionID string `json:"executionId,omitempty"`
	// Lines are the history lines (1-based) that show it.
	Lines   []int  `json:"lines"`
	Message string `json:"message"`
}

func (v Violation) String() string {
	var b strings.Builder
	b.WriteString(v.Name)
	if v.ExecutionID != "" {
		fmt.Fprintf(&b, " %s", v.ExecutionID)
	}
	if len(v.Lines) > 0 {
		ls := make([]string, len(v.Lines))
		for i, l := range v.Lines {
			ls[i] = fmt.Sprint(l)
		}
		fmt.Fprintf(&b, " (lines %s)", strings.Join(ls, ", "))
	}
	b.WriteString(": ")
	b.WriteString(v.Message)
	return b.String()
}

// Options adjust a check beyond what the history's run line says.
type Options struct {
	// FalseTakeoversCounted reports false takeovers without counting them
	// as violations (the run line's settings.falseTakeovers "count" does
	// the same).
	FalseTakeoversCounted bool
	// LinearizabilityTimeout bounds porcupine per execution; past it the
	// execution's result is Unknown, reported as a note (0: 10 s).
	LinearizabilityTimeout time.Duration
	// VisualizeDir, when set, receives porcupine's HTML visualization of
	// each execution found not linearizable (<execution id>.html).
	VisualizeDir string
}

// Report is what a check found.
type Report struct {
	Seed       int64
	Command    string
	Violations []Violation
	// Notes are what the checker could not decide or left out, for people.
	Notes []string
	// Figures: lines, requests by op, events checked, faults by kind,
	// executions, false takeovers.
	Requests       map[string]int
	Faults         map[string]int
	Events         int
	Executions     int
	FalseTakeovers int
	// Linearized executions porcupine checked, over Operations operations.
	Linearized, Operations int
}

// OK reports whether the history broke no promise.
func (r *Report) OK() bool { return len(r.Violations) == 0 }

// Names returns the distinct violation names found, sorted.
func (r *Report) Names() []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range r.Violations {
		if !seen[v.Name] {
			seen[v.Name] = true
			out = append(out, v.Name)
		}
	}
	sort.Strings(out)
	return out
}

func (r *Report) add(name, exec string, lines []int, format string, args ...any) {
	ls := slices.DeleteFunc(slices.Clone(lines), func(l int) bool { return l == 0 }) // 0: no line known
	slices.Sort(ls)
	ls = slices.Compact(ls)
	r.Violations = append(r.Violations, Violation{Name: name, ExecutionID: exec, Lines: ls, Message: fmt.Sprintf(format, args...)})
}

func (r *Report) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// Check holds every line of a history to the protocol.
func Check(lines []history.Line, opt Options) *Report {
	ix := buildIndex(lines)
	rep := &Report{Requests: map[string]int{}, Faults: map[string]int{}}
	ids := map[int64]int{} // request id -> its line: ids are unique in a history
	for _, l := range lines {
		switch l.Kind {
		case history.KindRequest:
			rep.Requests[l.Request.Op]++
			if prev, dup := ids[l.Request.ID]; dup {
				rep.add(MalformedHistory, "", []int{prev, l.No}, "request id %d is on two lines", l.Request.ID)
			}
			ids[l.Request.ID] = l.No
		case history.KindFault:
			if l.Fault.Phase == history.PhaseStart {
				rep.Faults[l.Fault.Fault]++
			}
		case history.KindEvent:
			rep.Events++
		}
	}
	rep.Events += ix.replayed
	rep.Executions = len(ix.execs)
	if ix.run == nil {
		rep.add(MalformedHistory, "", nil, "no run line: the history must start with one")
	} else {
		rep.Seed, rep.Command = ix.run.Seed, ix.run.Command
		if ix.run.Settings.FalseTakeovers == "count" {
			opt.FalseTakeoversCounted = true
		}
	}
	if opt.LinearizabilityTimeout == 0 {
		opt.LinearizabilityTimeout = 10 * time.Second
	}
	checkStarts(ix, rep)
	checkStreams(ix, rep)
	checkFinalReplays(ix, rep)
	checkLiveness(ix, rep)
	checkApprovals(ix, rep)
	checkBusyPolicies(ix, rep)
	checkMaxRunning(ix, rep)
	checkUsage(ix, rep)
	checkDeletions(ix, rep)
	checkLinearizable(ix, rep, opt.LinearizabilityTimeout, opt.VisualizeDir)
	checkTakeovers(ix, rep, opt.FalseTakeoversCounted)
	sort.SliceStable(rep.Violations, func(i, j int) bool {
		a, b := rep.Violations[i], rep.Violations[j]
		if len(a.Lines) > 0 && len(b.Lines) > 0 && a.Lines[0] != b.Lines[0] {
			return a.Lines[0] < b.Lines[0]
		}
		return a.Name < b.Name
	})
	return rep
}
