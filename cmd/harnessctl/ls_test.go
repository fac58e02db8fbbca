package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// TestLs: ls lists executions newest first, pages with --limit and --after, walks every page with
// --all, filters by state and by conversation, and refuses an unknown state before asking.
func TestLs(t *testing.T) {
	base := serve(t)
	c := sdkClient(t, base)
	ctx := context.Background()
	conv, err := c.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := c.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string // oldest first
	for i := 0; i < 3; i++ {
		exec, err := c.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "x", Config: api.JSONObject{"requireApproval": true}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, exec.ID)
	}
	elsewhere, err := c.StartExecution(ctx, api.StartExecutionRequest{ConversationID: other.ID, ProviderID: "mock", Input: "y"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitForTerminal(ctx, elsewhere.ID); err != nil {
		t.Fatal(err)
	}

	idsIn := func(out string) []string {
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
			got = append(got, strings.Fields(line)[0])
		}
		return got
	}

	s := ctl(t, base, "", 0, "ls", "--limit", "2")
	s.expect(t, exitOK)
	if got := idsIn(s.stdout.String()); strings.Join(got, ",") != elsewhere.ID+","+ids[2] {
		t.Errorf("first page %v, want the two newest", got)
	}
	msg := s.stderr.String()
	i := strings.Index(msg, "--after ")
	if i < 0 {
		t.Fatalf("ls did not say how to get the next page:\n%s", msg)
	}
	cursor := strings.Fields(msg[i+len("--after "):])[0]
	s = ctl(t, base, "", 0, "ls", "--limit", "2", "--after", cursor)
	s.expect(t, exitOK)
	if got := idsIn(s.stdout.String()); strings.Join(got, ",") != ids[1]+","+ids[0] {
		t.Errorf("second page %v, want %v", got, []string{ids[1], ids[0]})
	}

	s = ctl(t, base, "", 0, "ls", "--all", "--limit", "1", "--conversation", conv.ID, "--state", "awaiting_approval,running,queued")
	s.expect(t, exitOK)
	if got := idsIn(s.stdout.String()); strings.Join(got, ",") != ids[2]+","+ids[1]+","+ids[0] {
		t.Errorf("--all over one conversation %v, want its three executions newest first", got)
	}

	s = ctl(t, base, "", 0, "ls", "--json", "--all", "--state", "succeeded")
	s.expect(t, exitOK)
	lines := strings.Split(strings.TrimSpace(s.stdout.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("--state succeeded printed %d lines, want 1:\n%s", len(lines), s.stdout.String())
	}
	var x api.Execution
	if err := json.Unmarshal([]byte(lines[0]), &x); err != nil || x.ID != elsewhere.ID || x.State != api.ExecutionStateSucceeded {
		t.Errorf("--json line %s (%v), want the succeeded execution", lines[0], err)
	}

	s = ctl(t, base, "", 0, "ls", "--state", "sleeping")
	s.expect(t, exitUsage)

	for _, id := range ids {
		if _, err := c.CancelExecution(ctx, id, api.CancelExecutionRequest{}); err != nil {
			t.Fatal(err)
		}
	}
}
