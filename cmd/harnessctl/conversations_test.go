package main

import (
	"context"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// TestConversationsLsShowRename: conversation ls lists the most recently active first with
// its turns and last state; rename gives a title, and show, rename and chat then find the
// conversation by it; a title that names none, or two, is an error that says so.
func TestConversationsLsShowRename(t *testing.T) {
	base := serve(t)
	c := sdkClient(t, base)
	ctx := context.Background()
	quiet, err := c.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	busy, err := c.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	exec, err := c.StartExecution(ctx, api.StartExecutionRequest{ConversationID: busy.ID, ProviderID: "mock", Input: "plan the trip"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitForTerminal(ctx, exec.ID); err != nil {
		t.Fatal(err)
	}

	s := ctl(t, base, "", 0, "conversations", "ls")
	s.expect(t, exitOK)
	lines := strings.Split(strings.TrimSpace(s.stdout.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], busy.ID) || !strings.Contains(lines[1], "succeeded") ||
		!strings.Contains(lines[1], "plan the trip") || !strings.HasPrefix(lines[2], quiet.ID) {
		t.Fatalf("conversations ls:\n%s", s.stdout.String())
	}

	ctl(t, base, "", 0, "conversation", "rename", busy.ID, "Trip to Lisbon").expect(t, exitOK)
	s = ctl(t, base, "", 0, "conversation", "show", "Trip to Lisbon")
	s.expect(t, exitOK)
	if out := s.stdout.String(); !strings.Contains(out, busy.ID) || !strings.Contains(out, "Trip to Lisbon") {
		t.Fatalf("show by title:\n%s", out)
	}
	ctl(t, base, "", 0, "conversation", "rename", "Trip to Lisbon", "Lisbon, May").expect(t, exitOK)
	if got, _ := c.GetConversation(ctx, busy.ID); got.Title == nil || *got.Title != "Lisbon, May" {
		t.Fatalf("renamed by its title: %+v", got)
	}
	// chat by title continues that conversation: the turn lands in it.
	ctl(t, base, "second turn\n", 0, "chat", "Lisbon, May").expect(t, exitOK)
	list, err := c.ListConversationExecutions(ctx, busy.ID, nil)
	if err != nil || len(list.Executions) != 2 || list.Executions[0].Input != "second turn" {
		t.Fatalf("chat by title: the conversation's executions %+v, %v", list.Executions, err)
	}

	s = ctl(t, base, "", 0, "conversation", "show", "Nowhere")
	s.expect(t, exitError)
	if !strings.Contains(s.stderr.String(), `no conversation is titled "Nowhere"`) {
		t.Fatalf("show of an unknown title: %s", s.stderr.String())
	}
	ctl(t, base, "", 0, "conversation", "rename", quiet.ID, "Lisbon, May").expect(t, exitOK)
	s = ctl(t, base, "", 0, "chat", "Lisbon, May")
	s.expect(t, exitError)
	if !strings.Contains(s.stderr.String(), "2 conversations are titled") {
		t.Fatalf("chat with an ambiguous title: %s", s.stderr.String())
	}
}
