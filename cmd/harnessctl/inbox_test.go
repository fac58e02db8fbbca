package main

import (
	"context"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// inbox lists what waits and answers it by action id alone; rules adds, lists and revokes a
// standing rule that answers the next approval.
func TestInboxAndRules(t *testing.T) {
	base := serve(t)
	c := sdkClient(t, base)
	ctx := context.Background()
	empty := ctl(t, base, "", 0, "inbox")
	empty.expect(t, exitOK)
	if !strings.Contains(empty.stdout.String(), "Nothing is waiting") {
		t.Fatalf("an empty inbox: %q", empty.stdout.String())
	}
	conv, err := c.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	startWaiting := func(input string) (string, string) {
		exec, err := c.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: input,
			Config: api.JSONObject{"requireApproval": true, "editableApproval": true}})
		if err != nil {
			t.Fatal(err)
		}
		return exec.ID, waitForAction(t, c, exec.ID)
	}
	edited, editAction := startWaiting("first")
	rejected, rejectAction := startWaiting("second")

	list := ctl(t, base, "", 0, "inbox")
	list.expect(t, exitOK)
	out := list.stdout.String()
	if !strings.Contains(out, "ACTION") || strings.Index(out, editAction) > strings.Index(out, rejectAction) || !strings.Contains(out, "Approve mock execution") {
		t.Fatalf("inbox, oldest first:\n%s", out)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string // in stdout or stderr
	}{
		{[]string{"inbox", "answer", editAction}, exitUsage, "exactly one of"},
		{[]string{"inbox", "answer", editAction, "--approve", "--reject"}, exitUsage, "exactly one of"},
		{[]string{"inbox", "answer", "action_gone", "--approve"}, exitError, "is not waiting for an answer"},
		{[]string{"inbox", "answer", editAction, "--edit", `{"input":7}`}, exitError, "/arguments/input"},
		{[]string{"inbox", "answer", editAction, "--edit", `{"input":"edited"}`}, exitOK, edited},
		{[]string{"inbox", "answer", rejectAction, "--reject", "--message", "too late"}, exitOK, rejected},
	} {
		s := ctl(t, base, "", 0, tc.args...)
		s.expect(t, tc.code)
		if got := s.stdout.String() + s.stderr.String(); !strings.Contains(got, tc.want) {
			t.Fatalf("%v: %q, want %q in it", tc.args, got, tc.want)
		}
	}
	for id, want := range map[string]string{edited: "Echo: edited", rejected: "Mock execution was not approved: too late"} {
		final, err := c.WaitForTerminal(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if final.FinalOutput != nil {
			got = *final.FinalOutput
		} else if final.Error != nil {
			got = final.Error.Message
		}
		if got != want {
			t.Fatalf("%s ended %q, want %q", id, got, want)
		}
	}

	add := ctl(t, base, "", 0, "rules", "add", "--conversation", conv.ID, "--title", "Approve mock *", "--approve")
	add.expect(t, exitOK)
	ruleID, _, _ := strings.Cut(add.stdout.String(), ":")
	auto, err := c.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "third",
		Config: api.JSONObject{"requireApproval": true}})
	if err != nil {
		t.Fatal(err)
	}
	if final, err := c.WaitForTerminal(ctx, auto.ID); err != nil || final.State != api.ExecutionStateSucceeded {
		t.Fatalf("the rule's approval: %s %v", final.State, err)
	}
	rules := ctl(t, base, "", 0, "rules")
	rules.expect(t, exitOK)
	if !strings.Contains(rules.stdout.String(), ruleID) || !strings.Contains(rules.stdout.String(), `title "Approve mock *"`) {
		t.Fatalf("rules:\n%s", rules.stdout.String())
	}
	ctl(t, base, "", 0, "rules", "revoke", ruleID).expect(t, exitOK)
	active := ctl(t, base, "", 0, "rules", "--active")
	active.expect(t, exitOK)
	if strings.Contains(active.stdout.String(), ruleID) {
		t.Fatalf("a revoked rule listed as active:\n%s", active.stdout.String())
	}
	ctl(t, base, "", 0, "rules", "add", "--tool-kind", "read").expect(t, exitUsage)
	bad := ctl(t, base, "", 0, "rules", "add", "--approve")
	bad.expect(t, exitError)
	if !strings.Contains(bad.stderr.String(), "/match") {
		t.Fatalf("a rule matching nothing nameable: %s", bad.stderr.String())
	}
}
