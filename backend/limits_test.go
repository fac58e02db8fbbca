package backend_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// words is n words of length size, space-separated: the mock emits one delta per word.
func words(n, size int) string {
	return strings.TrimSpace(strings.Repeat(strings.Repeat("a", size)+" ", n))
}

// A large input makes the mock emit one delta per word; past the event limit the execution
// fails with one run.failed naming the limit, and nothing more is stored.
func TestEventCountLimitFailsTheExecution(t *testing.T) {
	rt := openRuntime(t, "", backend.Options{MaxEventsPerExecution: 50})
	conv := newConversation(t, rt)
	exec := start(t, rt, conv, startOpts{input: words(100_000, 1), config: api.JSONObject{"delayMs": 0}})
	events := wantFailed(t, rt, exec.ID, "Execution exceeded the limit of 50 events")
	if len(events) != 51 {
		t.Fatalf("%d events, want the 50 allowed and run.failed: %v", len(events), types(events))
	}
	stored, _, err := rt.ListEvents(ctxT(t), exec.ID, 0, 0)
	if err != nil || len(stored) != 51 {
		t.Fatalf("the store holds %d events (%v), want 51", len(stored), err)
	}
}

// The byte limit counts the events as stored (their JSON); the execution fails before its
// events exceed it.
func TestEventBytesLimitFailsTheExecution(t *testing.T) {
	const limit = 16 << 10
	rt := openRuntime(t, "", backend.Options{MaxEventBytesPerExecution: limit})
	conv := newConversation(t, rt)
	exec := start(t, rt, conv, startOpts{input: words(10_000, 100), config: api.JSONObject{"delayMs": 0}})
	events := wantFailed(t, rt, exec.ID, fmt.Sprintf("Execution exceeded the limit of %d bytes of events", limit))
	stored, _, err := rt.ListEvents(ctxT(t), exec.ID, 0, 0)
	if err != nil || len(stored) != len(events) {
		t.Fatalf("the store holds %d events (%v), the log %d", len(stored), err, len(events))
	}
	total := 0
	for _, e := range stored[:len(stored)-1] {
		total += len(e.JSON)
	}
	if total > limit || total < limit-1024 {
		t.Fatalf("%d bytes of events before run.failed, want at most %d (and about that much)", total, limit)
	}
}

// Every kind of provider emission counts, and the provider is stopped even when it ignores
// the refusal: its context is cancelled with the limit as its cause.
func TestEventLimitStopsAProviderThatIgnoresIt(t *testing.T) {
	causes := make(chan error, 1)
	p := &scripted{run: func(ctx context.Context, run *backend.Run) (backend.Result, error) {
		// run.queued and run.started are events 1 and 2; the limit leaves room for two more.
		if err := run.EmitArtifact(api.CreateArtifactInput{ID: "a1", Name: "a1", MediaType: "text/plain"}); err != nil {
			return backend.Result{}, err
		}
		if err := run.Emit(api.StandardEventTypeProviderEvent, api.JSONObject{"n": 1}); err != nil {
			return backend.Result{}, err
		}
		_, err := run.RequestAction(ctx, backend.ActionInput{Kind: api.ActionKindApproval, Title: "over the limit"})
		if err == nil {
			return backend.Result{}, fmt.Errorf("an action past the limit was opened")
		}
		for ctx.Err() == nil {
			_ = run.EmitText("ignored refusal") // a careless provider goes on
		}
		causes <- context.Cause(ctx)
		return backend.Result{FinalOutput: "never"}, nil
	}}
	rt := scriptedRuntime(t, backend.Options{MaxEventsPerExecution: 4}, p)
	exec := startScripted(t, rt, newConversation(t, rt))
	const message = "Execution exceeded the limit of 4 events"
	events := wantFailed(t, rt, exec.ID, message)
	want := []api.StandardEventType{api.StandardEventTypeRunQueued, api.StandardEventTypeRunStarted,
		api.StandardEventTypeArtifactCreated, api.StandardEventTypeProviderEvent, api.StandardEventTypeRunFailed}
	if got := types(events); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	select {
	case cause := <-causes:
		if cause == nil || cause.Error() != message {
			t.Fatalf("provider context cause %v, want %q", cause, message)
		}
	case <-ctxT(t).Done():
		t.Fatal("the provider was not stopped")
	}
}
