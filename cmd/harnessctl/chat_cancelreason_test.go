package main

import (
	"context"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// TestChatSaysWhyATurnWasCancelled: the history of a continued chat says of a cancelled turn why
// (the snapshot's cancelReason): "turn interrupted by exec_…" for one a newer message of an
// interrupt conversation cancelled, the caller's reason for one cancelled with a reason, and
// "cancelled" only when none was given.
func TestChatSaysWhyATurnWasCancelled(t *testing.T) {
	base := serve(t)
	c := sdkClient(t, base)
	ctx := context.Background()
	chat, err := c.NewConversation(ctx, api.BusyPolicyInterrupt, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := func(input string, config api.JSONObject) api.Execution {
		t.Helper()
		exec, err := chat.Start(ctx, api.StartExecutionRequest{ProviderID: "mock", Input: input, Config: config})
		if err != nil {
			t.Fatal(err)
		}
		return exec
	}
	end := func(id string) {
		t.Helper()
		if _, err := c.WaitForTerminal(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	slow := api.JSONObject{"delayMs": 600000}
	interrupted := start("slow", slow)
	newer := start("instead", nil)
	end(interrupted.ID)
	end(newer.ID)
	withReason := start("slow again", slow)
	if _, err := c.CancelExecution(ctx, withReason.ID, api.CancelExecutionRequest{Reason: new("the user left")}); err != nil {
		t.Fatal(err)
	}
	end(withReason.ID)
	bare := start("slow once more", slow)
	if _, err := c.CancelExecution(ctx, bare.ID, api.CancelExecutionRequest{}); err != nil {
		t.Fatal(err)
	}
	end(bare.ID)

	s := ctl(t, base, "", 0, "chat", "--history", "4", chat.ID)
	s.expect(t, exitOK)
	want := "> slow\n(turn interrupted by " + newer.ID + ": a newer message cancelled it)\n> instead\nEcho: instead\n" +
		"> slow again\n(cancelled: the user left)\n> slow once more\n(cancelled)\n"
	if got := s.stdout.String(); got != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", got, want)
	}
}
