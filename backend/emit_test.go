package backend_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Each invalid provider behaviour of docs/protocol.md §4.4 / §14.1 fails the execution with the
// reference's message, a single run.failed last, and contiguous sequences; the refused emission
// appends nothing.
func TestInvalidProviderBehaviourFailsTheExecution(t *testing.T) {
	cases := []struct {
		name    string
		run     func(ctx context.Context, run *backend.Run) error
		message string
	}{
		{"reserved event", func(_ context.Context, run *backend.Run) error {
			return run.Emit(api.StandardEventTypeRunCompleted, api.JSONObject{"finalOutput": "x"})
		}, "Provider emitted a reserved or unknown event type"},
		{"unknown event", func(_ context.Context, run *backend.Run) error {
			return run.Emit("made.up", api.JSONObject{})
		}, "Provider emitted a reserved or unknown event type"},
		{"non-JSON data", func(_ context.Context, run *backend.Run) error {
			return run.Emit(api.StandardEventTypeProviderEvent, api.JSONObject{"n": math.Inf(1)})
		}, "Provider emitted invalid JSON event data"},
		{"unencodable data", func(_ context.Context, run *backend.Run) error {
			return run.Emit(api.StandardEventTypeProviderEvent, api.JSONObject{"c": make(chan int)})
		}, "Provider emitted invalid JSON event data"},
		{"non-string delta", func(_ context.Context, run *backend.Run) error {
			return run.Emit(api.StandardEventTypeOutputTextDelta, api.JSONObject{"text": 42})
		}, "Provider emitted an invalid text delta"},
		{"delta without text", func(_ context.Context, run *backend.Run) error {
			return run.Emit(api.StandardEventTypeOutputTextDelta, api.JSONObject{})
		}, "Provider emitted an invalid text delta"},
		{"empty action title", func(ctx context.Context, run *backend.Run) error {
			_, err := run.RequestAction(ctx, backend.ActionInput{Kind: api.ActionKindApproval})
			return err
		}, "Provider requested an invalid action"},
		{"unknown action kind", func(ctx context.Context, run *backend.Run) error {
			_, err := run.RequestAction(ctx, backend.ActionInput{Kind: "vote", Title: "t"})
			return err
		}, "Provider requested an invalid action"},
		{"invalid artifact descriptor", func(_ context.Context, run *backend.Run) error {
			return run.Emit(api.StandardEventTypeArtifactCreated, api.JSONObject{"id": "a", "name": "n"})
		}, "Provider emitted an invalid artifact descriptor"},
		{"artifact metadata null", func(_ context.Context, run *backend.Run) error {
			return run.Emit(api.StandardEventTypeArtifactCreated, api.JSONObject{"id": "a", "name": "n", "mediaType": "text/plain", "metadata": nil})
		}, "Provider emitted an invalid artifact descriptor"},
		{"artifact empty uri", func(_ context.Context, run *backend.Run) error {
			empty := ""
			return run.EmitArtifact(api.CreateArtifactInput{ID: "a", Name: "n", MediaType: "text/plain", URI: &empty})
		}, "Provider emitted an invalid artifact descriptor"},
		{"thrown error", func(context.Context, *backend.Run) error {
			return errors.New("synthetic provider failure")
		}, "synthetic provider failure"},
		{"empty error message", func(context.Context, *backend.Run) error {
			return errors.New("")
		}, "Provider failed without an error message"},
		{"panic", func(context.Context, *backend.Run) error {
			panic("boom")
		}, "Provider panicked: boom"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var emitErr error
			p := &scripted{run: func(ctx context.Context, run *backend.Run) (backend.Result, error) {
				emitErr = tc.run(ctx, run)
				return backend.Result{FinalOutput: "ignored"}, emitErr
			}}
			rt := scriptedRuntime(t, backend.Options{}, p)
			exec := startScripted(t, rt, newConversation(t, rt))
			events := wantFailed(t, rt, exec.ID, tc.message)
			if got := types(events); len(got) != 3 {
				t.Fatalf("refused emission appended something: %v", got)
			}
			if emitErr != nil && backend.ErrorCode(emitErr) == "" && tc.name != "thrown error" && tc.name != "empty error message" {
				t.Fatalf("refusal is not a *backend.Error: %T", emitErr)
			}
		})
	}
}

func TestEventDataLimit(t *testing.T) {
	p := &scripted{run: func(_ context.Context, run *backend.Run) (backend.Result, error) {
		if err := run.EmitText(strings.Repeat("a", 100)); err != nil {
			return backend.Result{}, err
		}
		return backend.Result{}, run.EmitText(strings.Repeat("a", 2000))
	}}
	rt := scriptedRuntime(t, backend.Options{MaxEventDataBytes: 1024}, p)
	exec := startScripted(t, rt, newConversation(t, rt))
	events := wantFailed(t, rt, exec.ID, "Provider emitted event data larger than 1024 bytes")
	if len(events) != 4 || events[2].Type != api.StandardEventTypeOutputTextDelta {
		t.Fatalf("events %v", types(events))
	}
}

// A provider may keep other keys in a delta and emit provider.event; emissions after the
// execution is terminal are ignored silently.
func TestProviderEmissionsAreKeptAndIgnoredAfterTerminal(t *testing.T) {
	late := make(chan error, 1)
	var saved *backend.Run
	p := &scripted{run: func(_ context.Context, run *backend.Run) (backend.Result, error) {
		saved = run
		if err := run.Emit(api.StandardEventTypeOutputTextDelta, api.JSONObject{"text": "", "extra": []any{1.5, "x"}}); err != nil {
			return backend.Result{}, err
		}
		if err := run.Emit(api.StandardEventTypeProviderEvent, api.JSONObject{"provider": "scripted", "method": "m", "params": nil}); err != nil {
			return backend.Result{}, err
		}
		return backend.Result{FinalOutput: "done"}, nil
	}}
	rt := scriptedRuntime(t, backend.Options{}, p)
	exec := startScripted(t, rt, newConversation(t, rt))
	events, final := finalOf(t, rt, exec.ID)
	checkLog(t, final, events)
	if jsonString(events[2].Data) != `{"extra":[1.5,"x"],"text":""}` || jsonString(events[3].Data) != `{"method":"m","params":null,"provider":"scripted"}` {
		t.Fatalf("data %v / %v", events[2].Data, events[3].Data)
	}
	go func() { late <- saved.EmitText("too late") }()
	if err := <-late; err != nil {
		t.Fatalf("emit after terminal: %v", err)
	}
	if again, _ := finalOf(t, rt, exec.ID); len(again) != len(events) {
		t.Fatalf("emission after terminal was appended")
	}
}

func TestProviderGetsItsOwnConfigCopy(t *testing.T) {
	seen := make(chan api.JSONObject, 1)
	p := &scripted{run: func(_ context.Context, run *backend.Run) (backend.Result, error) {
		cfg := run.Config()
		cfg["nested"].(map[string]any)["k"] = "changed by provider"
		seen <- cfg
		return backend.Result{}, nil
	}}
	rt := scriptedRuntime(t, backend.Options{}, p)
	conv := newConversation(t, rt)
	exec := start(t, rt, conv, startOpts{provider: "scripted", config: api.JSONObject{"nested": map[string]any{"k": "v"}}})
	<-seen
	finalOf(t, rt, exec.ID)
	if got := getExecution(t, rt, exec.ID).EffectiveConfig["nested"].(map[string]any)["k"]; got != "v" {
		t.Fatalf("provider changed effectiveConfig: %v", got)
	}
}
