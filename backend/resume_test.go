package backend_test

import (
	"context"
	"slices"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// resumable is a scripted provider that is also a backend.Resumer.
type resumable struct {
	scripted
	resume func(ctx context.Context, run *backend.Run) (backend.Result, error)
}

func (p *resumable) Resume(ctx context.Context, run *backend.Run) (backend.Result, error) {
	return p.resume(ctx, run)
}

// firstRun emits one delta with checkpoint "1" (or, with the input "ask", asks for approval
// with checkpoint "asked"), then waits for the runtime to close.
func firstRun(ctx context.Context, run *backend.Run) (backend.Result, error) {
	if run.Input() == "ask" {
		if _, err := run.WithCheckpoint([]byte("asked")).OpenAction(backend.ActionInput{Kind: api.ActionKindApproval, Title: "go on?"}); err != nil {
			return backend.Result{}, err
		}
	} else if err := run.WithCheckpoint([]byte("1")).EmitText("before "); err != nil {
		return backend.Result{}, err
	}
	<-ctx.Done()
	return backend.Result{}, context.Cause(ctx)
}

// resumeRun continues from the checkpoint: after a pending approval, it waits for the answer.
func resumeRun(ctx context.Context, run *backend.Run) (backend.Result, error) {
	cp := string(run.Checkpoint())
	if action, pending := run.PendingAction(); pending {
		if _, err := run.AwaitAction(ctx, action.ID); err != nil {
			return backend.Result{}, err
		}
	}
	if cp == "not resumable" {
		return backend.Result{}, backend.ErrNotResumable
	}
	if err := run.EmitText("after"); err != nil {
		return backend.Result{}, err
	}
	return backend.Result{FinalOutput: "resumed from " + cp}, nil
}

// TestResumerContinuesAfterRestart: an execution of a Resumer left running by the previous
// process is resumed, not failed: Resume sees the checkpoint committed with the last event,
// its emissions continue the sequence, and the execution completes. Executions of other
// providers in the same store are still failed by recovery.
func TestResumerContinuesAfterRestart(t *testing.T) {
	dir := t.TempDir()
	p := &resumable{scripted: scripted{id: "resumable", run: firstRun}, resume: resumeRun}
	rt := openRuntime(t, dir, backend.Options{Providers: []backend.Provider{p, &scripted{id: "plain", run: blockUntilCancelled}}})
	conv := newConversation(t, rt)
	resumed := start(t, rt, conv, startOpts{provider: "resumable", input: "go"})
	waitForEvent(t, rt, resumed.ID, api.StandardEventTypeOutputTextDelta)
	plain := start(t, rt, conv, startOpts{provider: "plain", input: "x"})
	waitForEvent(t, rt, plain.ID, api.StandardEventTypeRunStarted)
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}

	rt2 := openRuntime(t, dir, backend.Options{Providers: []backend.Provider{p, &scripted{id: "plain", run: blockUntilCancelled}}})
	events, final := finalOf(t, rt2, resumed.ID)
	checkLog(t, final, events)
	want := []api.StandardEventType{api.StandardEventTypeRunQueued, api.StandardEventTypeRunStarted,
		api.StandardEventTypeOutputTextDelta, api.StandardEventTypeOutputTextDelta,
		api.StandardEventTypeOutputTextDone, api.StandardEventTypeRunCompleted}
	if !slices.Equal(types(events), want) {
		t.Fatalf("events %v, want %v", types(events), want)
	}
	if final.State != api.ExecutionStateSucceeded || *final.FinalOutput != "resumed from 1" {
		t.Fatalf("final %s %v", final.State, final.FinalOutput)
	}
	wantFailed(t, rt2, plain.ID, "Runtime restarted before the execution finished")
}

// TestResumerKeepsPendingAction: an execution resumed while awaiting approval keeps its action
// pending; the answer given after the restart reaches Resume.
func TestResumerKeepsPendingAction(t *testing.T) {
	dir := t.TempDir()
	p := &resumable{scripted: scripted{id: "resumable", run: firstRun}, resume: resumeRun}
	rt := openRuntime(t, dir, backend.Options{Providers: []backend.Provider{p}})
	conv := newConversation(t, rt)
	exec := start(t, rt, conv, startOpts{provider: "resumable", input: "ask"})
	actionID := typed(waitForEvent(t, rt, exec.ID, api.StandardEventTypeActionRequired).Data.AsActionRequest()).ID
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}

	rt2 := openRuntime(t, dir, backend.Options{Providers: []backend.Provider{p}})
	if got := getExecution(t, rt2, exec.ID); got.State != api.ExecutionStateAwaitingApproval {
		t.Fatalf("state after restart %s", got.State)
	}
	if _, err := rt2.RespondToAction(ctxT(t), exec.ID, actionID, approve(true)); err != nil {
		t.Fatal(err)
	}
	events, final := finalOf(t, rt2, exec.ID)
	checkLog(t, final, events)
	if final.State != api.ExecutionStateSucceeded || *final.FinalOutput != "resumed from asked" {
		t.Fatalf("final %s %v %v", final.State, final.FinalOutput, types(events))
	}
}

// TestResumerSeesAnAnswerGivenBeforeItAsked: a client may answer a resumed execution's pending
// action before the provider's Resume asks for it (right after the restart): PendingAction
// still returns that action while its answer waits, and AwaitAction returns the answer, so the
// provider neither misses it nor asks a second time.
func TestResumerSeesAnAnswerGivenBeforeItAsked(t *testing.T) {
	dir := t.TempDir()
	gate := make(chan struct{})
	type seen struct {
		pending  bool
		approved bool
	}
	got := make(chan seen, 1)
	p := &resumable{scripted: scripted{id: "resumable", run: firstRun}, resume: func(ctx context.Context, run *backend.Run) (backend.Result, error) {
		<-gate
		action, pending := run.PendingAction()
		s := seen{pending: pending}
		if pending {
			response, err := run.AwaitAction(ctx, action.ID)
			if err != nil {
				return backend.Result{}, err
			}
			s.approved = response.Approved != nil && *response.Approved
		}
		got <- s
		return backend.Result{FinalOutput: "done"}, nil
	}}
	rt := openRuntime(t, dir, backend.Options{Providers: []backend.Provider{p}})
	conv := newConversation(t, rt)
	exec := start(t, rt, conv, startOpts{provider: "resumable", input: "ask"})
	actionID := typed(waitForEvent(t, rt, exec.ID, api.StandardEventTypeActionRequired).Data.AsActionRequest()).ID
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}

	rt2 := openRuntime(t, dir, backend.Options{Providers: []backend.Provider{p}})
	if _, err := rt2.RespondToAction(ctxT(t), exec.ID, actionID, approve(true)); err != nil {
		t.Fatal(err)
	}
	close(gate)
	if s := <-got; !s.pending || !s.approved {
		t.Fatalf("Resume after the answer: PendingAction %v, approved %v; want the answered action and its answer", s.pending, s.approved)
	}
	events, final := finalOf(t, rt2, exec.ID)
	checkLog(t, final, events)
	if final.State != api.ExecutionStateSucceeded {
		t.Fatalf("final %s %v", final.State, types(events))
	}
}

// TestResumerMayDecline: ErrNotResumable fails the execution as recovery would.
func TestResumerMayDecline(t *testing.T) {
	dir := t.TempDir()
	run := func(ctx context.Context, run *backend.Run) (backend.Result, error) {
		if err := run.SaveCheckpoint([]byte("not resumable")); err != nil {
			return backend.Result{}, err
		}
		if err := run.EmitText("before "); err != nil { // no checkpoint: the saved one stays
			return backend.Result{}, err
		}
		<-ctx.Done()
		return backend.Result{}, context.Cause(ctx)
	}
	p := &resumable{scripted: scripted{id: "resumable", run: run}, resume: resumeRun}
	rt := openRuntime(t, dir, backend.Options{Providers: []backend.Provider{p}})
	exec := start(t, rt, newConversation(t, rt), startOpts{provider: "resumable", input: "go"})
	waitForEvent(t, rt, exec.ID, api.StandardEventTypeOutputTextDelta)
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	rt2 := openRuntime(t, dir, backend.Options{Providers: []backend.Provider{p}})
	wantFailed(t, rt2, exec.ID, "Runtime restarted before the execution finished")
}

// TestProviderStatePersists: a provider's key/value survives a restart and is scoped to the
// provider id.
func TestProviderStatePersists(t *testing.T) {
	dir := t.TempDir()
	var got []string
	p := &scripted{id: "stateful", run: func(_ context.Context, run *backend.Run) (backend.Result, error) {
		value, found, err := run.LoadState("k")
		if err != nil {
			return backend.Result{}, err
		}
		if found {
			got = append(got, string(value))
		} else {
			got = append(got, "-")
		}
		return backend.Result{}, run.SaveState("k", []byte(run.Input()))
	}}
	for _, input := range []string{"one", "two"} {
		rt := openRuntime(t, dir, backend.Options{Providers: []backend.Provider{p}})
		exec := start(t, rt, newConversation(t, rt), startOpts{provider: "stateful", input: input})
		finalOf(t, rt, exec.ID)
		if err := rt.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(got, []string{"-", "one"}) {
		t.Fatalf("states read %v", got)
	}
}
