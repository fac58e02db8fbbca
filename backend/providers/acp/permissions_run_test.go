package acp

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

func approved(b bool) *bool { return &b }

func value(v any) *api.JSONValue { return &v }

// runPermission runs the "permission" scenario and answers its one action with response.
func runPermission(t *testing.T, options string, response api.ActionResponse) (*harness, api.Execution, []api.RuntimeEvent) {
	t.Helper()
	h := newHarness(t, "permission", func(c *Config) {
		if options != "" {
			c.Env["ACP_FIXTURE_OPTIONS"] = options
		}
	})
	id := h.start("edit the file", nil)
	events := h.follow(id, func(e api.RuntimeEvent) {
		if e.Type == api.StandardEventTypeActionRequired {
			h.respond(id, typed(e.Data.AsActionRequest()).ID, response)
		}
	})
	exec := h.execution(id)
	h.assertWarm(id)
	return h, exec, events
}

// The approval action carries the reference's title and payload, and {approved:true} selects the
// first allow_once option.
func TestApprovedSelectsAllowOnce(t *testing.T) {
	_, exec, events := runPermission(t, "", api.ActionResponse{Approved: approved(true)})
	requireTerminal(t, exec, events, api.ExecutionStateSucceeded)
	if *exec.FinalOutput != "selected:allow-once" {
		t.Fatalf("agent got %q, want allow-once", *exec.FinalOutput)
	}
	required := ofType(events, api.StandardEventTypeActionRequired)
	if len(required) != 1 {
		t.Fatalf("%d action.required events:%s", len(required), describe(events))
	}
	action := typed(required[0].Data.AsActionRequest())
	if action.Kind != api.ActionKindApproval || action.Title != "Edit fixture.txt" {
		t.Fatalf("action = %+v", action)
	}
	wantPayload := map[string]any{
		"toolCallId": "call-1",
		"options": []any{
			map[string]any{"optionId": "allow-once", "name": "Option allow-once", "kind": "allow_once"},
			map[string]any{"optionId": "allow-always", "name": "Option allow-always", "kind": "allow_always"},
			map[string]any{"optionId": "reject-once", "name": "Option reject-once", "kind": "reject_once"},
			map[string]any{"optionId": "reject-always", "name": "Option reject-always", "kind": "reject_always"},
		},
	}
	if !reflect.DeepEqual(action.Payload, wantPayload) {
		t.Fatalf("payload = %v\nwant %v", action.Payload, wantPayload)
	}
	responded := ofType(events, api.StandardEventTypeActionResponded)
	if len(responded) != 1 || typed(responded[0].Data.AsActionRespondedData()).ActionID != action.ID {
		t.Fatalf("action.responded = %v", responded)
	}
}

// {approved:false} selects reject-once; the native turn still ends normally → succeeded.
func TestRejectedSelectsRejectOnceAndTheTurnSucceeds(t *testing.T) {
	_, exec, events := runPermission(t, "", api.ActionResponse{Approved: approved(false)})
	requireTerminal(t, exec, events, api.ExecutionStateSucceeded)
	if *exec.FinalOutput != "selected:reject-once" {
		t.Fatalf("agent got %q, want reject-once", *exec.FinalOutput)
	}
}

// allow_always is selected only when named explicitly and approved.
func TestExplicitChoiceSelectsTheNamedOption(t *testing.T) {
	for name, response := range map[string]api.ActionResponse{
		"value.optionId": {Approved: approved(true), Value: value(map[string]any{"optionId": "allow-always"})},
		"value string":   {Approved: approved(true), Value: value("allow-always")},
	} {
		t.Run(name, func(t *testing.T) {
			_, exec, events := runPermission(t, "", response)
			requireTerminal(t, exec, events, api.ExecutionStateSucceeded)
			if *exec.FinalOutput != "selected:allow-always" {
				t.Fatalf("agent got %q, want allow-always", *exec.FinalOutput)
			}
		})
	}
	t.Run("reject named without approved", func(t *testing.T) {
		_, exec, events := runPermission(t, "", api.ActionResponse{Value: value("reject-always")})
		requireTerminal(t, exec, events, api.ExecutionStateSucceeded)
		if *exec.FinalOutput != "selected:reject-always" {
			t.Fatalf("agent got %q, want reject-always", *exec.FinalOutput)
		}
	})
}

// Contradictory, unknown and malformed choices answer "cancelled"; the fixture then ends its
// turn with stop reason cancelled, which fails the execution generically.
func TestUnusableChoicesAnswerCancelledAndFail(t *testing.T) {
	cases := map[string]struct {
		options  string
		response api.ActionResponse
	}{
		"allow named but not approved":    {"", api.ActionResponse{Approved: approved(false), Value: value("allow-once")}},
		"allow named, approved absent":    {"", api.ActionResponse{Value: value(map[string]any{"optionId": "allow-once"})}},
		"reject named but approved":       {"", api.ActionResponse{Approved: approved(true), Value: value("reject-once")}},
		"unknown option":                  {"", api.ActionResponse{Approved: approved(true), Value: value("allow-forever")}},
		"value is a number":               {"", api.ActionResponse{Approved: approved(true), Value: value(42.0)}},
		"optionId is not a string":        {"", api.ActionResponse{Approved: approved(true), Value: value(map[string]any{"optionId": 7.0})}},
		"empty string value":              {"", api.ActionResponse{Approved: approved(true), Value: value("")}},
		"no approved, no value":           {"", api.ActionResponse{}},
		"approve once, only always":       {"allow-always:allow_always,reject-once:reject_once", api.ActionResponse{Approved: approved(true)}},
		"duplicate option ids":            {"same:allow_once,same:reject_once", api.ActionResponse{Approved: approved(true)}},
		"empty option id":                 {":allow_once,reject-once:reject_once", api.ActionResponse{Approved: approved(true)}},
		"reject when no reject_once kind": {"allow-once:allow_once,reject-always:reject_always", api.ActionResponse{Approved: approved(false)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h, exec, events := runPermission(t, tc.options, tc.response)
			requireGenericFailure(t, exec, events)
			if !errors.Is(h.failure(exec.ID), errTurnCancelled) {
				t.Fatalf("failure cause = %v, want the agent's cancelled stop reason", h.failure(exec.ID))
			}
			if !slices.Contains(h.agentSaw(), "permission call-1 outcome=cancelled") {
				t.Fatalf("agent did not get a cancelled outcome: %v", h.agentSaw())
			}
		})
	}
}

// Two concurrent permission requests become two actions, one at a time, each answered on its own.
func TestConcurrentPermissionRequestsAreSerialized(t *testing.T) {
	h := newHarness(t, "two-permissions", nil)
	id := h.start("two steps", nil)
	events := h.follow(id, func(e api.RuntimeEvent) {
		if e.Type != api.StandardEventTypeActionRequired {
			return
		}
		payload := typed(e.Data.AsActionRequest()).Payload
		h.respond(id, typed(e.Data.AsActionRequest()).ID, api.ActionResponse{Approved: approved(payload["toolCallId"] == "call-1")})
	})
	exec := h.execution(id)
	requireTerminal(t, exec, events, api.ExecutionStateSucceeded)
	if *exec.FinalOutput != "call-1=allow-once call-2=reject-once" {
		t.Fatalf("agent got %q", *exec.FinalOutput)
	}
	// Pairs: required, responded, required, responded — never two pending at once.
	var sequence []string
	for _, e := range events {
		switch e.Type {
		case api.StandardEventTypeActionRequired:
			sequence = append(sequence, "required:"+typed(e.Data.AsActionRequest()).ID)
		case api.StandardEventTypeActionResponded:
			sequence = append(sequence, "responded:"+typed(e.Data.AsActionRespondedData()).ActionID)
		}
	}
	if len(sequence) != 4 ||
		strings.TrimPrefix(sequence[0], "required:") != strings.TrimPrefix(sequence[1], "responded:") ||
		strings.TrimPrefix(sequence[2], "required:") != strings.TrimPrefix(sequence[3], "responded:") {
		t.Fatalf("action events = %v", sequence)
	}
	h.assertWarm(id)
}

// More outstanding permission requests than max_pending_permissions is a violation: the overflow
// is answered cancelled and the execution fails.
func TestTooManyPendingPermissionsFail(t *testing.T) {
	h := newHarness(t, "permission-flood", func(c *Config) {
		c.MaxPendingPermissions = 2
		c.Env["ACP_FIXTURE_PERMISSIONS"] = "3"
	})
	exec, events := h.run("flood", nil) // the action is never answered
	requireGenericFailure(t, exec, events)
	if !errors.Is(h.failure(exec.ID), errTooManyPermissions) {
		t.Fatalf("failure cause = %v", h.failure(exec.ID))
	}
	cancelled := 0
	for _, line := range h.wireLines() {
		if strings.Contains(line, `"outcome":{"outcome":"cancelled"}`) {
			cancelled++
		}
	}
	if cancelled != 3 {
		t.Fatalf("%d cancelled answers on the wire, want 3 (overflow, pending, waiting): %v", cancelled, h.wireLines())
	}
	h.assertReaped(exec.ID) // a violation: the process is not trusted with another turn

}
