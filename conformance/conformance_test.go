package conformance_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/conformance"
)

func run(t *testing.T, opts conformance.Options) conformance.Report {
	t.Helper()
	rep, err := conformance.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// The reference's checks of every scenario, in the reference's order.
var scenarioChecks = map[string][]string{
	"basic": {"manifest-valid", "idempotency-reuse", "idempotency-conflict", "execution-succeeded", "events-present",
		"event-sequence-contiguous", "one-terminal-event", "terminal-state", "final-output-event", "terminal-event-last",
		"terminal-event-matches-state", "cursor-replay", "artifact-event-correlation", "execution-cleanup"},
	"approval": {"manifest-valid", "idempotency-reuse", "idempotency-conflict", "execution-succeeded", "events-present",
		"event-sequence-contiguous", "one-terminal-event", "terminal-state", "final-output-event", "terminal-event-last",
		"action-response-correlation", "terminal-event-matches-state", "cursor-replay", "artifact-event-correlation", "execution-cleanup"},
	"input": {"manifest-valid", "idempotency-reuse", "idempotency-conflict", "execution-succeeded", "events-present",
		"event-sequence-contiguous", "one-terminal-event", "terminal-state", "final-output-event", "terminal-event-last",
		"action-response-correlation", "terminal-event-matches-state", "cursor-replay", "artifact-event-correlation", "execution-cleanup"},
	"artifacts": {"manifest-valid", "idempotency-reuse", "idempotency-conflict", "execution-succeeded", "events-present",
		"event-sequence-contiguous", "one-terminal-event", "terminal-state", "final-output-event", "terminal-event-last",
		"terminal-event-matches-state", "cursor-replay", "artifact-event-correlation", "artifact-count", "execution-cleanup"},
	"denial": {"manifest-valid", "idempotency-reuse", "idempotency-conflict", "execution-failed", "events-present",
		"event-sequence-contiguous", "one-terminal-event", "terminal-state", "final-output-event", "terminal-event-last",
		"action-response-correlation", "terminal-event-matches-state", "cursor-replay", "artifact-event-correlation", "execution-cleanup"},
	"cancellation": {"manifest-valid", "idempotency-reuse", "idempotency-conflict", "execution-cancelled", "events-present",
		"event-sequence-contiguous", "one-terminal-event", "terminal-state", "final-output-event", "terminal-event-last",
		"terminal-event-matches-state", "cursor-replay", "artifact-event-correlation", "execution-cleanup"},
}

var httpChecks = []string{"health", "runtime", "invalid-execution-request", "invalid-cancellation-request",
	"invalid-cursors", "malformed-json", "required-body", "not-found", "provider-not-found", "capability-unsupported",
	"idempotency-reuse", "idempotency-conflict", "sse-replay", "sse-framing", "json-replay-terminal",
	"json-replay-beyond-end", "cancel-terminal-noop", "invalid-action-response", "action-not-found",
	"approval-with-artifact", "duplicate-action-response", "truncated-stream"}

// TestSuitePassesAgainstOurServer runs the whole suite against the real proxy and runtime: every
// check passes, none is skipped, and the names and their order are the stable ones.
func TestSuitePassesAgainstOurServer(t *testing.T) {
	base := serve(t, nil)
	var seen []string
	rep := run(t, conformance.Options{BaseURL: base, OnCheck: func(c conformance.Check) { seen = append(seen, c.Name) }})
	for _, c := range rep.Checks {
		if !c.Passed || c.Skipped {
			t.Errorf("%s", c)
		}
	}
	var want []string
	for _, sc := range []string{"basic", "approval", "input", "artifacts", "denial", "cancellation"} {
		for _, name := range scenarioChecks[sc] {
			want = append(want, sc+"/"+name)
		}
	}
	for _, name := range httpChecks {
		want = append(want, "http/"+name)
	}
	var got []string
	for _, c := range rep.Checks {
		got = append(got, c.Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("check names:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !slices.Equal(seen, got) {
		t.Errorf("OnCheck saw %v, the report has %v", seen, got)
	}
	if !rep.Passed() || rep.Summary() != fmt.Sprintf("%d passed, 0 failed", len(want)) {
		t.Errorf("summary %q, passed %t", rep.Summary(), rep.Passed())
	}
}
