package main

import (
	"context"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// harnessctl chat at a terminal (a pseudo-terminal) against the real bin/caddy, run by
// TestEndToEnd: a line typed while a turn runs under each busy policy, approvals answered
// inline, Ctrl-C cancelling the turn and not the chat, Ctrl-C and Ctrl-D at the prompt leaving.
// The running turn is one the test started with a mock that sleeps for ten minutes, so it runs
// until it is cancelled, whatever the machine's speed.

// testChatApprovalAndCtrlCAtPrompt: a new conversation (enqueue by default), a turn that asks
// for approval answered at the prompt, the next prompt, and Ctrl-C there leaves with exit 0.
func (e *e2e) testChatApprovalAndCtrlCAtPrompt(t *testing.T) {
	term := startInTerminal(t, e.ctlBin, e.base, "chat", "--config", `{"requireApproval":true}`)
	term.waitFor(t, "leaves\r\n> ")
	term.write(t, "deploy the site\n")
	term.waitFor(t, "[y/N] ")
	term.write(t, "y\n")
	term.waitFor(t, "Echo: deploy the site\r\n> ")
	term.write(t, "\x03")
	if code := term.wait(t); code != exitOK {
		t.Fatalf("exit code %d, want %d; terminal:\n%s", code, exitOK, term.output())
	}
	conv := chatConversation(t, e.base, term.output())
	if !strings.Contains(term.output(), "left the chat; 'harnessctl chat "+conv.ID+"' continues it") {
		t.Errorf("leaving did not say how to continue:\n%s", term.output())
	}
	if conv.BusyPolicy == nil || *conv.BusyPolicy != api.BusyPolicyEnqueue {
		t.Errorf("policy %v, want enqueue", conv.BusyPolicy)
	}
	turns := history(t, e.base, conv.ID)
	if len(turns) != 1 || turns[0].State != api.ExecutionStateSucceeded {
		t.Fatalf("turns %+v, want one, succeeded", turns)
	}
	responded := findEvent(replay(t, e.client, turns[0].ID), api.StandardEventTypeActionResponded)
	if responded == nil || !deref(typed(responded.Data.AsActionRespondedData()).Approved) {
		t.Errorf("action.responded %v, want approved", responded)
	}
}

// testChatEnqueue: continuing a conversation shows its history and follows its running turn; a
// line typed meanwhile is queued behind it; Ctrl-C cancels the running turn only, the queued
// one is then answered, and Ctrl-D at the prompt leaves.
func (e *e2e) testChatEnqueue(t *testing.T) {
	conv, running := e.busyConversation(t, api.BusyPolicyEnqueue)
	term := startInTerminal(t, e.ctlBin, e.base, "chat", conv)
	term.waitFor(t, running+" (running) has not ended: following it")
	term.write(t, "second\n")
	term.waitFor(t, " is queued: it waits for "+running)
	term.write(t, "\x03")
	term.waitFor(t, "execution "+running+" cancelled")
	term.waitFor(t, "> second\r\nEcho: second\r\n> ")
	term.write(t, "\x04")
	if code := term.wait(t); code != exitOK {
		t.Fatalf("exit code %d, want %d; terminal:\n%s", code, exitOK, term.output())
	}
	if !strings.Contains(term.output(), "> earlier\r\nEcho: earlier\r\n") {
		t.Errorf("the history was not shown:\n%s", term.output())
	}
	turns := history(t, e.base, conv)
	if len(turns) != 3 {
		t.Fatalf("%d turns, want 3", len(turns))
	}
	requireCancelled(t, e.client, turns[1], cancelReason)
	if queued := turns[2]; queued.Input != "second" || queued.State != api.ExecutionStateSucceeded {
		t.Errorf("the queued turn %+v, want \"second\", succeeded", queued)
	}
}

// testChatRejectKeepsLine: under reject a line typed while a turn runs is refused and kept;
// once the turn is cancelled, an empty line sends it.
func (e *e2e) testChatRejectKeepsLine(t *testing.T) {
	conv, running := e.busyConversation(t, api.BusyPolicyReject)
	term := startInTerminal(t, e.ctlBin, e.base, "chat", conv)
	term.waitFor(t, "has not ended: following it")
	term.write(t, "now\n")
	term.waitFor(t, "the conversation is busy ("+running+" has not ended): the line was not sent; it is kept")
	if turns := history(t, e.base, conv); len(turns) != 2 {
		t.Fatalf("%d turns after the refused line, want 2", len(turns))
	}
	term.write(t, "\x03")
	term.waitFor(t, `an empty line sends the kept line: "now"`+"\r\n> ")
	term.write(t, "\n")
	term.waitFor(t, "Echo: now\r\n> ")
	term.write(t, "\x04")
	if code := term.wait(t); code != exitOK {
		t.Fatalf("exit code %d, want %d; terminal:\n%s", code, exitOK, term.output())
	}
	turns := history(t, e.base, conv)
	if len(turns) != 3 || turns[2].Input != "now" || turns[2].State != api.ExecutionStateSucceeded {
		t.Fatalf("turns %+v, want the kept line sent once, answered", turns)
	}
	requireCancelled(t, e.client, turns[1], cancelReason)
}

// testChatInterrupt: under interrupt a line typed while a turn runs cancels it (the notice says
// by which) and is answered.
func (e *e2e) testChatInterrupt(t *testing.T) {
	conv, running := e.busyConversation(t, api.BusyPolicyInterrupt)
	term := startInTerminal(t, e.ctlBin, e.base, "chat", conv)
	term.waitFor(t, "has not ended: following it")
	term.write(t, "instead\n")
	term.waitFor(t, " interrupts "+running)
	term.waitFor(t, "turn "+running+" interrupted by exec_")
	term.waitFor(t, "Echo: instead\r\n> ")
	term.write(t, "\x04")
	if code := term.wait(t); code != exitOK {
		t.Fatalf("exit code %d, want %d; terminal:\n%s", code, exitOK, term.output())
	}
	turns := history(t, e.base, conv)
	if len(turns) != 3 || turns[2].Input != "instead" || turns[2].State != api.ExecutionStateSucceeded {
		t.Fatalf("turns %+v", turns)
	}
	requireCancelled(t, e.client, turns[1], "Interrupted by "+turns[2].ID)
}

// busyConversation creates a conversation with policy, one answered turn ("earlier") and one
// that runs until cancelled, and returns their ids.
func (e *e2e) busyConversation(t *testing.T, policy api.BusyPolicy) (conv, running string) {
	t.Helper()
	ctx := context.Background()
	chat, err := e.client.NewConversation(ctx, policy, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chat.Run(ctx, api.StartExecutionRequest{ProviderID: "mock", Input: "earlier"}, sdk.RunHandlers{}); err != nil {
		t.Fatal(err)
	}
	exec, err := chat.Start(ctx, api.StartExecutionRequest{ProviderID: "mock", Input: "slow", Config: api.JSONObject{"delayMs": 600000}})
	if err != nil {
		t.Fatal(err)
	}
	return chat.ID, exec.ID
}

// requireCancelled checks that exec ended cancelled with reason.
func requireCancelled(t *testing.T, c *sdk.Client, exec api.Execution, reason string) {
	t.Helper()
	events := replay(t, c, exec.ID)
	last := events[len(events)-1]
	if last.Type != api.StandardEventTypeRunCancelled || deref(typed(last.Data.AsRunCancelledData()).Reason) != reason {
		t.Errorf("%s ended with %s %v, want run.cancelled with reason %q", exec.ID, last.Type, last.Data, reason)
	}
}
