package approvals

import (
	"errors"
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

func TestCheck(t *testing.T) {
	yes, no := true, false
	d := func(d api.Decision) *api.Decision { return &d }
	s := func(s string) *string { return &s }
	v := func(v any) *any { return &v }
	approval := api.ActionRequest{Kind: api.ActionKindApproval}
	editable := api.ActionRequest{Kind: api.ActionKindApproval, Arguments: &api.JSONObject{"command": "ls", "cwd": "/tmp"},
		Decisions: &[]api.Decision{api.DecisionApprove, api.DecisionReject, api.DecisionEdit},
		Options:   &[]api.ActionOption{{OptionID: "a1", Kind: api.ActionOptionKindAllowOnce}, {OptionID: "r*", Kind: api.ActionOptionKindRejectAlways}}}
	input := api.ActionRequest{Kind: api.ActionKindInput}
	for _, tc := range []struct {
		name     string
		req      api.ActionRequest
		resp     api.ActionResponse
		decision *api.Decision // what the provider gets
		approved *bool
		pointer  string // of a refusal
	}{
		{"{} decides nothing", approval, api.ActionResponse{}, nil, nil, ""},
		{"approved:true approves", approval, api.ActionResponse{Approved: &yes}, d(api.DecisionApprove), &yes, ""},
		{"approved:false rejects", approval, api.ActionResponse{Approved: &no}, d(api.DecisionReject), &no, ""},
		{"a value answers an input", input, api.ActionResponse{Value: v("x")}, d(api.DecisionRespond), nil, ""},
		{"a portable answer is never refused", input, api.ActionResponse{Approved: &yes}, nil, &yes, ""},
		{"reject sets approved", approval, api.ActionResponse{Decision: d(api.DecisionReject), Message: s("no")}, d(api.DecisionReject), &no, ""},
		{"approve and approved agree", approval, api.ActionResponse{Decision: d(api.DecisionApprove), Approved: &yes}, d(api.DecisionApprove), &yes, ""},
		{"a contradiction", approval, api.ActionResponse{Decision: d(api.DecisionApprove), Approved: &no}, nil, nil, "/approved"},
		{"a decision the kind cannot take", approval, api.ActionResponse{Decision: d(api.DecisionRespond), Value: v("x")}, nil, nil, "/decision"},
		{"edit without arguments to edit", approval, api.ActionResponse{Decision: d(api.DecisionEdit), Arguments: &api.JSONObject{}}, nil, nil, "/decision"},
		{"edit", editable, api.ActionResponse{Decision: d(api.DecisionEdit), Arguments: &api.JSONObject{"command": "ls -la", "cwd": "/", "new": 1}}, d(api.DecisionEdit), &yes, ""},
		{"arguments alone edit", editable, api.ActionResponse{Arguments: &api.JSONObject{"command": "ls -la", "cwd": "/"}}, d(api.DecisionEdit), &yes, ""},
		{"edit needs arguments", editable, api.ActionResponse{Decision: d(api.DecisionEdit)}, nil, nil, "/arguments"},
		{"edit of the wrong type", editable, api.ActionResponse{Decision: d(api.DecisionEdit), Arguments: &api.JSONObject{"command": []any{"ls"}, "cwd": "/"}}, nil, nil, "/arguments/command"},
		{"edit missing a member", editable, api.ActionResponse{Decision: d(api.DecisionEdit), Arguments: &api.JSONObject{"command": "ls"}}, nil, nil, "/arguments"},
		{"arguments with another decision", editable, api.ActionResponse{Decision: d(api.DecisionReject), Arguments: &api.JSONObject{"command": "ls", "cwd": "/"}}, nil, nil, "/arguments"},
		{"an option implies its decision", editable, api.ActionResponse{OptionID: s("r*")}, d(api.DecisionReject), &no, ""},
		{"an option and its decision", editable, api.ActionResponse{OptionID: s("a1"), Decision: d(api.DecisionApprove)}, d(api.DecisionApprove), &yes, ""},
		{"an option against its decision", editable, api.ActionResponse{OptionID: s("a1"), Decision: d(api.DecisionReject)}, nil, nil, "/optionId"},
		{"an unknown option", editable, api.ActionResponse{OptionID: s("a2")}, nil, nil, "/optionId"},
		{"no options to choose", approval, api.ActionResponse{OptionID: s("a1")}, nil, nil, "/optionId"},
		{"respond needs a value", input, api.ActionResponse{Decision: d(api.DecisionRespond)}, nil, nil, "/value"},
		{"respond takes no message", input, api.ActionResponse{Decision: d(api.DecisionRespond), Value: v("x"), Message: s("hi")}, nil, nil, "/message"},
		{"an input declined", input, api.ActionResponse{Decision: d(api.DecisionReject)}, d(api.DecisionReject), &no, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Check(tc.req, tc.resp)
			if tc.pointer != "" {
				var bad *Invalid
				if !errors.As(err, &bad) || bad.Pointer != tc.pointer || bad.Reason == "" {
					t.Fatalf("Check = %+v, %v; want refused at %s", got, err, tc.pointer)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !same(got.Decision, tc.decision) || !same(got.Approved, tc.approved) {
				t.Fatalf("decision %v approved %v, want %v %v", str(got.Decision), str(got.Approved), str(tc.decision), str(tc.approved))
			}
		})
	}
}

func same[T comparable](a, b *T) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func str[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestMatchesAndChoose(t *testing.T) {
	s := func(s string) *string { return &s }
	run := Subject{ProviderID: "acp", Kind: api.ActionKindApproval, Title: "Run rm -rf /tmp/x", ToolKind: "execute"}
	for _, tc := range []struct {
		m    api.ActionRuleMatch
		s    Subject
		want bool
	}{
		{api.ActionRuleMatch{ToolKind: s("execute")}, run, true},
		{api.ActionRuleMatch{ToolKind: s("read")}, run, false},
		{api.ActionRuleMatch{Title: s("Run rm *")}, run, true},
		{api.ActionRuleMatch{Title: s("Run rm")}, run, false}, // the whole title
		{api.ActionRuleMatch{Title: s("*rm*"), ProviderID: s("acp")}, run, true},
		{api.ActionRuleMatch{Title: s("*rm*"), ProviderID: s("a2a")}, run, false},
		{api.ActionRuleMatch{Title: s(ExactTitle("Run a*b"))}, Subject{Kind: api.ActionKindApproval, Title: "Run a*b"}, true},
		{api.ActionRuleMatch{Title: s(ExactTitle("Run a*b"))}, Subject{Kind: api.ActionKindApproval, Title: "Run aXb"}, false},
		{api.ActionRuleMatch{Title: s(`C:\\*`)}, Subject{Kind: api.ActionKindApproval, Title: `C:\Windows`}, true},
		{api.ActionRuleMatch{Title: s("*")}, run, false},        // never everything
		{api.ActionRuleMatch{ProviderID: s("acp")}, run, false}, // never everything
		{api.ActionRuleMatch{ToolKind: s("execute")}, Subject{Kind: api.ActionKindInput, ToolKind: "execute"}, false},
	} {
		if got := Matches(tc.m, tc.s); got != tc.want {
			t.Errorf("Matches(%+v, %+v) = %v", tc.m, tc.s, got)
		}
	}
	rule := func(id string, d api.RuleDecision, conv bool, revoked bool) store.Rule {
		r := store.Rule{ActionRule: api.ActionRule{ID: id, Decision: d, Source: api.ActionRuleSourceAPI, Match: api.ActionRuleMatch{ToolKind: s("execute")}}}
		if conv {
			r.ConversationID = s("conv")
		}
		if revoked {
			r.RevokedAt = s("2026-12-01T00:00:00.000Z")
		}
		return r
	}
	for _, tc := range []struct {
		rules []store.Rule
		want  string
	}{
		{[]store.Rule{rule("t-approve", api.RuleDecisionApprove, false, false), rule("c-approve", api.RuleDecisionApprove, true, false)}, "c-approve"},
		{[]store.Rule{rule("c-approve", api.RuleDecisionApprove, true, false), rule("t-reject", api.RuleDecisionReject, false, false)}, "t-reject"},
		{[]store.Rule{rule("revoked-reject", api.RuleDecisionReject, true, true), rule("t-approve", api.RuleDecisionApprove, false, false)}, "t-approve"},
		{[]store.Rule{rule("revoked", api.RuleDecisionApprove, false, true)}, ""},
	} {
		got := Choose(Precedence(tc.rules), run)
		if id := ""; got != nil {
			id = got.ID
			if id != tc.want {
				t.Errorf("Choose = %s, want %s", id, tc.want)
			}
		} else if tc.want != "" {
			t.Errorf("Choose = nil, want %s", tc.want)
		}
	}
}

func TestClosest(t *testing.T) {
	names := []string{"approved", "value", "metadata", "decision", "message", "arguments", "optionId"}
	for in, want := range map[string]string{"approve": "approved", "approvd": "approved", "optionID": "optionId", "mesage": "message",
		"zzz": "", "arg": "arguments", "valeu": "value", "approved": ""} {
		if got := Closest(in, names); got != want {
			t.Errorf("Closest(%q) = %q, want %q", in, got, want)
		}
	}
}
