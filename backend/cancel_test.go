package backend_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"

	"github.com/harness-edge/harness-edge/sdk/api"
)

func TestCancelRunningExecution(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	conv := newConversation(t, rt)
	exec := start(t, rt, conv, startOpts{input: "a b c d e f", config: api.JSONObject{"delayMs": 10000}})
	waitForEvent(t, rt, exec.ID, api.StandardEventTypeRunStarted)
	reason := "caller stopped"
	final, err := rt.CancelExecution(ctxT(t), exec.ID, &reason)
	if err != nil || final.State != api.ExecutionStateCancelled || final.EndedAt == nil {
		t.Fatalf("cancel: %v %+v", err, final)
	}
	events := collect(t, rt, exec.ID, 0)
	last := events[len(events)-1]
	if last.Type != api.StandardEventTypeRunCancelled || jsonString(last.Data) != `{"reason":"caller stopped"}` {
		t.Fatalf("last event %s %v", last.Type, last.Data)
	}
}

func TestCancelTerminalIsANoOp(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	exec := start(t, rt, newConversation(t, rt), startOpts{input: "hi"})
	events, final := finalOf(t, rt, exec.ID)
	reason := "late"
	again, err := rt.CancelExecution(ctxT(t), exec.ID, &reason)
	if err != nil || again.State != api.ExecutionStateSucceeded || again.UpdatedAt != final.UpdatedAt {
		t.Fatalf("cancel of terminal: %v %+v", err, again)
	}
	if after, _ := finalOf(t, rt, exec.ID); len(after) != len(events) {
		t.Fatal("cancel of a terminal execution appended an event")
	}
}

// Twenty concurrent cancels share one operation: one cleanup call, one run.cancelled carrying
// the first caller's reason and the cleanup error, and everyone gets the cancelled execution.
func TestConcurrentCancelsShareOneCleanup(t *testing.T) {
	p := &cancelable{scripted: scripted{run: blockUntilCancelled}}
	release := make(chan struct{})
	p.cancel = func(context.Context, string, string) error {
		<-release // hold the operation open so every caller joins it
		return errors.New("provider cleanup failed")
	}
	rt := scriptedRuntime(t, backend.Options{}, p)
	exec := startScripted(t, rt, newConversation(t, rt))
	waitForEvent(t, rt, exec.ID, api.StandardEventTypeRunStarted)

	const n = 20
	results := make([]api.Execution, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			reason := "caller stopped"
			if i > 0 {
				reason = fmt.Sprintf("caller %d", i)
			}
			results[i], errs[i] = rt.CancelExecution(ctxT(t), exec.ID, &reason)
		})
		if i == 0 {
			waitForState(rt, exec.ID, api.ExecutionStateCancelling) // the first caller's reason wins
		}
	}
	for p.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || results[i].State != api.ExecutionStateCancelled {
			t.Fatalf("cancel %d: %v %s", i, errs[i], results[i].State)
		}
	}
	if calls := p.calls.Load(); calls != 1 {
		t.Fatalf("cleanup hook called %d times", calls)
	}
	events, final := finalOf(t, rt, exec.ID)
	checkLog(t, final, events)
	if got := jsonString(events[len(events)-1].Data); got != `{"providerCleanupError":"provider cleanup failed","reason":"caller stopped"}` {
		t.Fatalf("run.cancelled data %s", got)
	}
}

// Cancel while queued: the provider never runs, the hook is still called exactly once.
func TestCancelBeforeStartup(t *testing.T) {
	var ran atomic.Bool
	p := &cancelable{scripted: scripted{run: func(context.Context, *backend.Run) (backend.Result, error) {
		ran.Store(true)
		return backend.Result{}, nil
	}}}
	p.cancel = func(context.Context, string, string) error { return errors.New("startup cleanup failed") }
	release := make(chan struct{})
	rt := scriptedRuntime(t, backend.Options{}, p)
	backend.SetBeforeRunHook(rt, func(string) { <-release })
	exec := startScripted(t, rt, newConversation(t, rt))
	reason := "immediate cancellation"
	final, err := rt.CancelExecution(ctxT(t), exec.ID, &reason)
	close(release)
	if err != nil || final.State != api.ExecutionStateCancelled || final.StartedAt != nil {
		t.Fatalf("cancel: %v %+v", err, final)
	}
	events := collect(t, rt, exec.ID, 0)
	if got := types(events); len(got) != 2 || got[0] != api.StandardEventTypeRunQueued || got[1] != api.StandardEventTypeRunCancelled {
		t.Fatalf("events %v", got)
	}
	if got := jsonString(events[1].Data); got != `{"providerCleanupError":"startup cleanup failed","reason":"immediate cancellation"}` {
		t.Fatalf("data %s", got)
	}
	rt.Close() // waits for the execution goroutine, which must not have run the provider
	if ran.Load() || p.calls.Load() != 1 {
		t.Fatalf("provider ran=%v, hook calls=%d", ran.Load(), p.calls.Load())
	}
}

// A hook that does not return within CancelTimeout: cancelled exactly once anyway, with a
// providerCleanupError saying so.
func TestCancelCleanupTimeout(t *testing.T) {
	stuck := make(chan struct{})
	t.Cleanup(func() { close(stuck) })
	p := &cancelable{scripted: scripted{run: blockUntilCancelled}}
	p.cancel = func(context.Context, string, string) error { <-stuck; return nil }
	rt := scriptedRuntime(t, backend.Options{CancelTimeout: 50 * time.Millisecond}, p)
	exec := startScripted(t, rt, newConversation(t, rt))
	waitForEvent(t, rt, exec.ID, api.StandardEventTypeRunStarted)
	final, err := rt.CancelExecution(ctxT(t), exec.ID, nil)
	if err != nil || final.State != api.ExecutionStateCancelled {
		t.Fatalf("cancel: %v %s", err, final.State)
	}
	events, final := finalOf(t, rt, exec.ID)
	checkLog(t, final, events)
	if got := jsonString(events[len(events)-1].Data); got != `{"providerCleanupError":"Provider cleanup did not finish within 50ms"}` {
		t.Fatalf("data %s", got)
	}
}

// Cancelling while an action is pending abandons it: the provider's request fails with
// "Execution aborted", a later response is ACTION_NOT_FOUND, the provider's context carries the
// reason, and emissions while cancelling are still appended.
func TestCancelAbandonsPendingAction(t *testing.T) {
	requestErr := make(chan error, 1)
	cause := make(chan error, 1)
	p := &cancelable{scripted: scripted{run: func(ctx context.Context, run *backend.Run) (backend.Result, error) {
		_, err := run.RequestAction(ctx, backend.ActionInput{Kind: api.ActionKindApproval, Title: "approve?"})
		requestErr <- err
		cause <- context.Cause(ctx)
		return backend.Result{}, err
	}}}
	hookEmitted := make(chan error, 1)
	var runRef atomic.Pointer[backend.Run]
	p.cancel = func(context.Context, string, string) error {
		if run := runRef.Load(); run != nil {
			hookEmitted <- run.EmitText("emitted while cancelling")
		}
		return nil
	}
	inner := p.scripted.run
	p.scripted.run = func(ctx context.Context, run *backend.Run) (backend.Result, error) {
		runRef.Store(run)
		return inner(ctx, run)
	}
	rt := scriptedRuntime(t, backend.Options{}, p)
	exec := startScripted(t, rt, newConversation(t, rt))
	required := waitForEvent(t, rt, exec.ID, api.StandardEventTypeActionRequired)
	reason := "no longer needed"
	if _, err := rt.CancelExecution(ctxT(t), exec.ID, &reason); err != nil {
		t.Fatal(err)
	}
	if err := <-requestErr; err == nil || err.Error() != "Execution aborted" {
		t.Fatalf("pending request: %v", err)
	}
	if err := <-cause; err == nil || err.Error() != reason {
		t.Fatalf("context cause %v", err)
	}
	if err := <-hookEmitted; err != nil {
		t.Fatalf("emit while cancelling: %v", err)
	}
	_, err := rt.RespondToAction(ctxT(t), exec.ID, typed(required.Data.AsActionRequest()).ID, approve(true))
	wantCode(t, err, backend.CodeActionNotFound, "")
	events, final := finalOf(t, rt, exec.ID)
	checkLog(t, final, events)
	if got := types(events); got[len(got)-2] != api.StandardEventTypeOutputTextDelta {
		t.Fatalf("emission while cancelling missing: %v", got)
	}
}
