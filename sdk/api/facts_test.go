package api_test

import (
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// The generated facts agree with the generated enums: every listed value is a member, the
// terminal event types and states pair up one to one, and run.completed, run.failed and
// run.cancelled are the terminal ones (the protocol's §6; a change to harness.yaml's
// x-terminal must be deliberate).
func TestFactsAgreeWithTheEnums(t *testing.T) {
	for _, typ := range api.StandardEventTypes {
		if !typ.Valid() {
			t.Errorf("StandardEventTypes lists %q, not a StandardEventType", typ)
		}
	}
	for _, code := range api.ErrorCodes {
		if !code.Valid() {
			t.Errorf("ErrorCodes lists %q, not an ErrorCode", code)
		}
	}
	var terminal []api.StandardEventType
	for _, typ := range api.StandardEventTypes {
		end := typ.EndState()
		if typ.Terminal() != (end != "") {
			t.Errorf("%s: Terminal() %v but EndState() %q", typ, typ.Terminal(), end)
		}
		if typ.Terminal() {
			terminal = append(terminal, typ)
			if !end.Terminal() || end.TerminalEvent() != typ {
				t.Errorf("%s ends in %q, whose terminal event is %q", typ, end, end.TerminalEvent())
			}
		}
	}
	want := []api.StandardEventType{api.StandardEventTypeRunCompleted, api.StandardEventTypeRunFailed, api.StandardEventTypeRunCancelled}
	if len(terminal) != len(want) || terminal[0] != want[0] || terminal[1] != want[1] || terminal[2] != want[2] {
		t.Fatalf("terminal event types %v, want %v", terminal, want)
	}
	for _, s := range []api.ExecutionState{api.ExecutionStateQueued, api.ExecutionStateRunning, api.ExecutionStateCancelling, api.ExecutionStateAwaitingApproval} {
		if s.Terminal() || s.TerminalEvent() != "" {
			t.Errorf("%s is not terminal", s)
		}
	}
}
