package acp

import (
	"context"
	"errors"
	"slices"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/approvals"
	"github.com/harness-edge/harness-edge/internal/acptest"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// What each answer does to an agent on the official TypeScript SDK that asks permission with all
// four kinds of option and acts on the outcome (the ts-agent's `ask <command>`), on every pinned
// SDK line: the answer's option or decision reaches it as the option it expects, an edit reaches
// it with the changed tool input, a reject with its message; an *_always option leaves a
// conversation rule, which answers the same question in the next turn without anyone. Answers
// that do not fit are refused and leave the action pending.
func TestAnswersReachTheTypeScriptAgent(t *testing.T) {
	agent := acptest.Prepare(t)
	str := func(s string) *string { return &s }
	decision := func(d api.Decision) *api.Decision { return &d }
	cases := []struct {
		name   string
		answer api.ActionResponse
		said   string // what the agent says it did
		// next, when set, is what the agent says in the conversation's next turn, answered by
		// the rule this answer left.
		next string
	}{
		{"portable approval", api.ActionResponse{Approved: approved(true)}, `Ran "ls" (allow-once).`, ""},
		{"an option by id", api.ActionResponse{OptionID: str("allow-once")}, `Ran "ls" (allow-once).`, ""},
		{"edit", api.ActionResponse{Decision: decision(api.DecisionEdit), Arguments: &api.JSONObject{"command": "ls -la", "cwd": "/tmp"}},
			`Ran "ls -la" (allow-once).`, ""},
		{"reject with a message", api.ActionResponse{Decision: decision(api.DecisionReject), Message: str("not on this machine")},
			`Did not run "ls" (reject-once): not on this machine.`, ""},
		{"allow always", api.ActionResponse{OptionID: str("allow-always")}, `Ran "ls" (allow-always).`, `Ran "ls" (allow-once).`},
		{"reject always", api.ActionResponse{OptionID: str("reject-always"), Message: str("never here")},
			`Did not run "ls" (reject-always): never here.`, `Did not run "ls" (reject-once): never here.`},
	}
	for _, sdk := range agent.SDKs {
		h := newAgentHarness(t, agent, continuityCase{sdk: sdk, mode: "none"}, t.TempDir(), nil)
		for _, tc := range cases {
			t.Run(sdk.Version+"/"+tc.name, func(t *testing.T) {
				t.Parallel() // mostly waiting for node to start an agent for each conversation
				conv := h.conversation()
				id := h.startIn(conv, "ask ls")
				var action api.ActionRequest
				events := h.follow(id, func(e api.RuntimeEvent) {
					if e.Type != api.StandardEventTypeActionRequired {
						return
					}
					action = typed(e.Data.AsActionRequest())
					requireRefusedLeavesPending(t, h, id, action.ID)
					h.respond(id, action.ID, tc.answer)
				})
				requirePermissionAction(t, action)
				exec := h.execution(id)
				requireTerminal(t, exec, events, api.ExecutionStateSucceeded)
				if exec.FinalOutput == nil || *exec.FinalOutput != tc.said {
					t.Fatalf("the agent said %q, want %q", deref(exec.FinalOutput), tc.said)
				}
				responded := typed(ofType(events, api.StandardEventTypeActionResponded)[0].Data.AsActionRespondedData())
				if tc.next == "" {
					if responded.CreatedRuleID != nil {
						t.Fatalf("answer %s left rule %s", tc.name, *responded.CreatedRuleID)
					}
					return
				}
				if responded.CreatedRuleID == nil {
					t.Fatalf("an *_always option left no rule: %+v", responded)
				}
				// The next turn asks the same question; the rule answers it in the commit that
				// records it, and nobody is asked.
				second, events := h.turn(conv, "ask ls")
				requireTerminal(t, second, events, api.ExecutionStateSucceeded)
				if second.FinalOutput == nil || *second.FinalOutput != tc.next {
					t.Fatalf("the second turn: the agent said %q, want %q", deref(second.FinalOutput), tc.next)
				}
				auto := typed(ofType(events, api.StandardEventTypeActionResponded)[0].Data.AsActionRespondedData())
				if auto.Actor == nil || auto.Actor.ID != *responded.CreatedRuleID || auto.Actor.Kind == nil || *auto.Actor.Kind != api.ActorKindRule {
					t.Fatalf("the automatic answer's actor = %+v, want rule %s", auto.Actor, *responded.CreatedRuleID)
				}
				// Another conversation is not bound by this one's rule: the agent asks again.
				other := h.startIn(h.conversation(), "ask ls")
				h.follow(other, func(e api.RuntimeEvent) {
					if e.Type == api.StandardEventTypeActionResponded {
						t.Fatalf("another conversation's action was answered without anyone: %s", e.Data)
					}
					if e.Type == api.StandardEventTypeActionRequired {
						if _, err := h.rt.CancelExecution(context.Background(), other, nil); err != nil {
							t.Errorf("cancel: %v", err)
						}
					}
				})
			})
		}
	}
}

// requirePermissionAction checks what the action says of the agent's request beside the
// reference's payload: its options as sent, the tool input as editable arguments, the tool kind.
func requirePermissionAction(t *testing.T, action api.ActionRequest) {
	t.Helper()
	var kinds []api.ActionOptionKind
	for _, o := range deref(action.Options) {
		kinds = append(kinds, o.Kind)
	}
	if want := []api.ActionOptionKind{api.ActionOptionKindAllowOnce, api.ActionOptionKindAllowAlways,
		api.ActionOptionKindRejectOnce, api.ActionOptionKindRejectAlways}; !slices.Equal(kinds, want) {
		t.Fatalf("options %+v, want the four kinds in the agent's order", action.Options)
	}
	if action.Arguments == nil || (*action.Arguments)["command"] != "ls" || deref(action.ToolKind) != "execute" {
		t.Fatalf("arguments %v, tool kind %v", action.Arguments, action.ToolKind)
	}
	if !slices.Contains(deref(action.Decisions), api.DecisionEdit) || len(action.Payload["options"].([]any)) != 4 {
		t.Fatalf("decisions %v, payload %v", action.Decisions, action.Payload)
	}
}

// requireRefusedLeavesPending answers the action badly in ways the caller can get wrong and
// checks each is a VALIDATION_ERROR naming the member, the action still pending.
func requireRefusedLeavesPending(t *testing.T, h *harness, executionID, actionID string) {
	t.Helper()
	edit := api.DecisionEdit
	respond := api.DecisionRespond
	for _, bad := range []struct {
		answer  api.ActionResponse
		pointer string
	}{
		{api.ActionResponse{Decision: &edit}, "/arguments"},
		{api.ActionResponse{Decision: &edit, Arguments: &api.JSONObject{"command": 5, "cwd": "/tmp"}}, "/arguments/command"},
		{api.ActionResponse{Decision: &edit, Arguments: &api.JSONObject{"command": "ls -la"}}, "/arguments"},
		{api.ActionResponse{Decision: &respond, Value: anyPtr("x")}, "/decision"},
		{api.ActionResponse{OptionID: ptrTo("allow-onse")}, "/optionId"},
		{api.ActionResponse{OptionID: ptrTo("allow-once"), Approved: approved(false)}, "/approved"},
	} {
		_, err := h.rt.RespondToAction(context.Background(), executionID, actionID, func() (api.ActionResponse, error) { return bad.answer, nil })
		var be *backend.Error
		if !errors.As(err, &be) || be.Code != backend.CodeValidation {
			t.Fatalf("answer %+v: %v, want VALIDATION_ERROR", bad.answer, err)
		}
		if got := be.Details["errors"].([]any)[0].(map[string]any)["pointer"]; got != bad.pointer {
			t.Fatalf("answer %+v: pointer %v, want %s", bad.answer, got, bad.pointer)
		}
		if state := h.execution(executionID).State; state != api.ExecutionStateAwaitingApproval {
			t.Fatalf("after a refused answer the execution is %s", state)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

func anyPtr(v any) *any { return &v }

// The rules' list of tool kinds is ACP's.
func TestRuleToolKindsAreACPs(t *testing.T) {
	want := []string{string(acpToolKinds[0])}
	for _, k := range acpToolKinds[1:] {
		want = append(want, string(k))
	}
	if !slices.Equal(approvals.ToolKinds, want) {
		t.Fatalf("approvals.ToolKinds = %v, ACP's are %v", approvals.ToolKinds, want)
	}
}

// acpToolKinds are the SDK's ToolKind constants.
var acpToolKinds = []acpsdk.ToolKind{acpsdk.ToolKindRead, acpsdk.ToolKindEdit, acpsdk.ToolKindDelete, acpsdk.ToolKindMove,
	acpsdk.ToolKindSearch, acpsdk.ToolKindExecute, acpsdk.ToolKindThink, acpsdk.ToolKindFetch, acpsdk.ToolKindSwitchMode, acpsdk.ToolKindOther}
