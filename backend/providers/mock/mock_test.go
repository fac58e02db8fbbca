package mock_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/sdk/api"
)

func TestChunks(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"Echo: hello runtime", []string{"Echo: ", "hello ", "runtime"}},
		{"  lead  and trail  ", []string{"lead  ", "and ", "trail  "}},
		{"   ", []string{"   "}},
		{"", nil},
		{"a\u00a0b\u2003c\ufeffd\u0085e", []string{"a\u00a0", "b\u2003", "c\ufeff", "d\u0085e"}}, // JS \s: NEL is not whitespace
		{"x\n\ty", []string{"x\n\t", "y"}},
	}
	for _, c := range cases {
		if got := mock.Chunks(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Chunks(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func run(t *testing.T, input string, config api.JSONObject) (api.Execution, []api.RuntimeEvent) {
	t.Helper()
	rt, err := local.Open(t.TempDir(), backend.Options{Providers: []backend.Provider{mock.New()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conv, _ := rt.CreateConversation(ctx, nil)
	exec, _, err := rt.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: mock.ID, Input: input, Config: config})
	if err != nil {
		t.Fatal(err)
	}
	var events []api.RuntimeEvent
	for e, err := range backend.FollowExecution(ctx, rt, exec.ID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		re, _ := e.Decode()
		events = append(events, re)
	}
	final, _ := rt.GetExecution(ctx, exec.ID)
	return final, events
}

func TestPrefixAndEmptyOutput(t *testing.T) {
	final, events := run(t, "", api.JSONObject{"prefix": "", "delayMs": 0})
	if final.State != api.ExecutionStateSucceeded || *final.FinalOutput != "" || len(events) != 4 {
		t.Fatalf("empty output: %s %q %d events", final.State, *final.FinalOutput, len(events))
	}
	final, events = run(t, "hi", api.JSONObject{"prefix": 42, "delayMs": -5})
	if *final.FinalOutput != "Echo: hi" || len(events) != 6 {
		t.Fatalf("non-string prefix and negative delay fall back: %q %d", *final.FinalOutput, len(events))
	}
	final, _ = run(t, "hi", api.JSONObject{"prefix": ">> ", "delayMs": 1.5, "artifactName": ""})
	if *final.FinalOutput != ">> hi" {
		t.Fatalf("prefix: %q", *final.FinalOutput)
	}
}

// returnsTo wraps the mock and closes returned when its Run returns.
type returnsTo struct {
	backend.Provider
	returned chan error
}

func (r returnsTo) Run(ctx context.Context, run *backend.Run) (backend.Result, error) {
	res, err := r.Provider.Run(ctx, run)
	r.returned <- err
	return res, err
}

// The delay before each chunk aborts at once on cancellation with "Execution aborted": with an
// hour-long delay, Run returns only because of that.
func TestDelayAbortsOnCancel(t *testing.T) {
	p := returnsTo{mock.New(), make(chan error, 1)}
	rt, err := local.Open(t.TempDir(), backend.Options{Providers: []backend.Provider{p}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	conv, _ := rt.CreateConversation(ctx, nil)
	exec, _, _ := rt.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: mock.ID, Input: "x", Config: api.JSONObject{"delayMs": 3_600_000}})
	for e := range backend.FollowExecution(ctx, rt, exec.ID, 0) {
		if e.Type == api.StandardEventTypeRunStarted {
			break
		}
	}
	final, err := rt.CancelExecution(ctx, exec.ID, nil)
	if err != nil || final.State != api.ExecutionStateCancelled {
		t.Fatalf("cancel: %v %s", err, final.State)
	}
	select {
	case err := <-p.returned:
		if err == nil || err.Error() != "Execution aborted" {
			t.Fatalf("Run returned %v", err)
		}
	case <-time.After(30 * time.Second): // hang guard only
		t.Fatal("the mock kept sleeping after cancellation")
	}
}
