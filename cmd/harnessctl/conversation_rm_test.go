package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// TestConversationRm: rm of a conversation with a running turn is refused and says how to go
// on; rm --cancel by its title deletes it (the turn cancelled first), after which the SDK gets
// ErrNotFound for it, and a FollowConversation open on it yields the Deleted message and ends
// without an error, while FollowTenant from the start meets the marker instead of its events.
func TestConversationRm(t *testing.T) {
	base := serve(t)
	c := sdkClient(t, base)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	conv, err := c.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RenameConversation(ctx, conv.ID, "Old chat"); err != nil {
		t.Fatal(err)
	}
	exec, err := c.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "slow",
		Config: api.JSONObject{"delayMs": 60000}})
	if err != nil {
		t.Fatal(err)
	}
	followed := make(chan []sdk.StreamEvent, 1)
	go func() {
		var got []sdk.StreamEvent
		for ev, err := range c.FollowConversation(ctx, conv.ID, sdk.FollowOptions{}) {
			if err != nil {
				got = append(got, sdk.StreamEvent{Cursor: "error: " + err.Error()})
				break
			}
			got = append(got, ev)
		}
		followed <- got
	}()

	s := ctl(t, base, "", 0, "conversation", "rm", "Old chat")
	s.expect(t, exitError)
	if !strings.Contains(s.stderr.String(), "CONVERSATION_BUSY") && !strings.Contains(s.stderr.String(), "busy") || !strings.Contains(s.stderr.String(), "--cancel") {
		t.Fatalf("rm of a busy conversation said:\n%s", s.stderr.String())
	}
	s = ctl(t, base, "", 0, "conversations", "rm", "Old chat", "--cancel")
	s.expect(t, exitOK)
	if want := "deleted " + conv.ID + " (1 executions)"; strings.TrimSpace(s.stdout.String()) != want {
		t.Fatalf("rm --cancel printed %q, want %q", s.stdout.String(), want)
	}
	if _, err := c.GetConversation(ctx, conv.ID); !errors.Is(err, sdk.ErrNotFound) {
		t.Fatalf("GetConversation after rm: %v, want ErrNotFound", err)
	}
	if _, err := c.GetExecution(ctx, exec.ID); !errors.Is(err, sdk.ErrNotFound) {
		t.Fatalf("GetExecution after rm: %v, want ErrNotFound", err)
	}
	if _, err := c.DeleteConversation(ctx, conv.ID, sdk.DeleteOptions{}); !errors.Is(err, sdk.ErrNotFound) {
		t.Fatalf("a second DeleteConversation: %v, want ErrNotFound", err)
	}

	got := <-followed
	if len(got) == 0 || got[len(got)-1].Deleted == nil || got[len(got)-1].Deleted.ConversationID != conv.ID {
		t.Fatalf("FollowConversation of the deleted conversation yielded %+v: want it to end with Deleted", got)
	}
	for ev, err := range c.FollowTenant(ctx, sdk.FollowOptions{After: "0"}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Event.ExecutionID == exec.ID {
			t.Fatalf("the tenant stream still carries %s of the deleted conversation", ev.Event.Type)
		}
		if ev.Deleted != nil {
			if ev.Deleted.ConversationID != conv.ID || ev.Deleted.Executions != 1 {
				t.Fatalf("marker %+v", ev.Deleted)
			}
			break
		}
	}
}
