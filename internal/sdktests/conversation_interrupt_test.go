package sdk_test

import (
	"context"
	"testing"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Conversation.Run of a turn that a newer message interrupts (busy policy interrupt) returns the
// cancelled execution with why: RunResult.CancelReason is the snapshot's cancelReason
// ("Interrupted by exec_…") and InterruptedBy names the newer turn.
func TestConversationRunSaysWhatInterruptedIt(t *testing.T) {
	srv := newTestServer(t)
	c := newClient(t, srv.URL)
	ctx := context.Background()
	chat, err := c.NewConversation(ctx, api.BusyPolicyInterrupt, nil)
	if err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		res sdk.RunResult
		err error
	}
	started := make(chan struct{})
	done := make(chan outcome, 1)
	go func() {
		var once bool
		res, err := chat.Run(ctx, api.StartExecutionRequest{ProviderID: "mock", Input: "slow", Config: api.JSONObject{"delayMs": 600000}},
			sdk.RunHandlers{OnEvent: func(ev api.RuntimeEvent) {
				if ev.Type == api.StandardEventTypeRunStarted && !once {
					once = true
					close(started)
				}
			}})
		done <- outcome{res, err}
	}()
	<-started
	newer, err := chat.Start(ctx, api.StartExecutionRequest{ProviderID: "mock", Input: "instead"})
	if err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.err != nil {
		t.Fatal(got.err)
	}
	if got.res.Execution.State != api.ExecutionStateCancelled {
		t.Fatalf("the interrupted turn's Run returned state %s, want cancelled", got.res.Execution.State)
	}
	if want := "Interrupted by " + newer.ID; got.res.CancelReason != want {
		t.Fatalf("RunResult.CancelReason = %q, want %q", got.res.CancelReason, want)
	}
	if by := got.res.InterruptedBy(); by != newer.ID {
		t.Fatalf("RunResult.InterruptedBy() = %q, want %q", by, newer.ID)
	}

	// A turn a caller cancels with a reason says that reason, and no interruption.
	ids := make(chan string, 1)
	go func() {
		res, err := chat.Run(ctx, api.StartExecutionRequest{ProviderID: "mock", Input: "slow again", Config: api.JSONObject{"delayMs": 600000}},
			sdk.RunHandlers{OnEvent: func(ev api.RuntimeEvent) {
				if ev.Type == api.StandardEventTypeRunStarted {
					ids <- ev.ExecutionID
				}
			}})
		done <- outcome{res, err}
	}()
	reason := "the user left"
	if _, err := c.CancelExecution(ctx, <-ids, api.CancelExecutionRequest{Reason: &reason}); err != nil {
		t.Fatal(err)
	}
	got = <-done
	if got.err != nil || got.res.CancelReason != reason || got.res.InterruptedBy() != "" {
		t.Fatalf("a turn cancelled by a caller: CancelReason %q, InterruptedBy %q, err %v; want %q and no interruption",
			got.res.CancelReason, got.res.InterruptedBy(), got.err, reason)
	}
}
