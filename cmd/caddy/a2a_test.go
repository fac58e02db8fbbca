package main

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/internal/a2atest"
	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

const a2aCaddyfile = "../../examples/a2a.Caddyfile"

// TestBinaryEdgeInFrontOfA2AAgent runs the real binary from examples/a2a.Caddyfile in front of
// the A2A test agent (official JavaScript SDK), in each of its builds (a2atest.Builds: A2A 0.3,
// A2A 1.0, and 1.0 with 0.3 compatibility), and kills it with SIGKILL twice: in the middle of a
// streaming task, and while an execution waits for the input the agent asked for. Each time it
// starts again on the same store; the running task is re-attached (SubscribeToTask + GetTask, or
// 0.3's tasks/resubscribe + tasks/get), the client's stream resumes, every delta arrives exactly
// once and in order, and the input given after the restart reaches the agent. Every request the
// agent got, before and after the restarts, carried the configured bearer token and spoke the
// build's A2A version.
func TestBinaryEdgeInFrontOfA2AAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)
	for _, build := range a2atest.Builds(t) {
		t.Run(build.Name, func(t *testing.T) { binaryEdgeInFrontOfA2AAgent(t, bin, build) })
	}
}

func binaryEdgeInFrontOfA2AAgent(t *testing.T, bin string, build a2atest.Build) {
	agent := build.Start(t)
	env := append(instanceEnv(t), "HARNESS_A2A_URL="+agent.URL, "HARNESS_A2A_TOKEN=binary-token")
	edge := startCaddyWith(t, bin, env, a2aCaddyfile)
	logs := []*server{edge}
	t.Cleanup(func() {
		if t.Failed() {
			for i, s := range logs {
				t.Logf("edge %d log:\n%s", i+1, s.log.String())
			}
		}
	})
	restart := func() {
		if err := edge.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-edge.exited
		edge = startCaddyWith(t, bin, env, a2aCaddyfile)
		logs = append(logs, edge)
	}

	client, err := sdk.New(edge.url, sdk.WithRetry(sdk.RetryPolicy{MinWait: 50 * time.Millisecond, MaxWait: 500 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conv, err := client.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}

	// A streaming task, the edge killed after the fifth delta.
	const ticks = 100
	exec, err := client.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "a2a",
		Input: fmt.Sprintf("slow %d 50", ticks)})
	if err != nil {
		t.Fatal(err)
	}
	var deltas []string
	var last api.RuntimeEvent
	for ev, err := range client.Events(ctx, exec.ID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		last = ev
		if ev.Type == api.StandardEventTypeOutputTextDelta {
			deltas = append(deltas, typed(ev.Data.AsTextDeltaData()).Text)
			if len(deltas) == 5 {
				restart()
			}
		}
	}
	var want []string
	for i := 1; i <= ticks; i++ {
		want = append(want, fmt.Sprintf("tick %d", i)+map[bool]string{true: "\n"}[i < ticks])
	}
	if strings.Join(deltas, "|") != strings.Join(want, "|") {
		t.Fatalf("deltas across the restart = %q\nwant %q", deltas, want)
	}
	if last.Type != api.StandardEventTypeRunCompleted || typed(last.Data.AsRunCompletedData()).FinalOutput != strings.Join(want, "") {
		t.Fatalf("the stream ended with %s %v", last.Type, last.Data)
	}

	// A task waiting for input, the edge killed before the answer.
	exec, err = client.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "a2a", Input: "ask"})
	if err != nil {
		t.Fatal(err)
	}
	var action api.ActionRequest
	for ev, err := range client.Events(ctx, exec.ID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == api.StandardEventTypeActionRequired {
			action = typed(ev.Data.AsActionRequest())
			break
		}
	}
	restart()
	if _, err := client.RespondToAction(ctx, exec.ID, action.ID, api.ActionResponse{Value: new(api.JSONValue("Grace"))}); err != nil {
		t.Fatal(err)
	}
	final, err := client.WaitForTerminal(ctx, exec.ID)
	if err != nil || final.State != api.ExecutionStateSucceeded || *final.FinalOutput != "Hello, Grace!" {
		t.Fatalf("after the restart and the answer: %+v, %v", final, err)
	}
	page, err := client.ListEvents(ctx, exec.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, ev := range page.Events {
		types = append(types, string(ev.Type))
	}
	if got, want := strings.Join(types, " "), "run.queued run.started provider.event action.required action.responded output.text.delta output.text.done run.completed"; got != want {
		t.Fatalf("events = %s\nwant %s", got, want)
	}
	edge.stop(t)

	calls := 0
	for _, r := range agent.Requests(t) {
		if r.Authorization != "Bearer binary-token" {
			t.Errorf("%s %s reached the agent with Authorization %q", r.Path, r.Method, r.Authorization)
		}
		if r.Method != "" {
			calls++
			if r.A2AVersion != build.Wire {
				t.Errorf("%s reached the agent with A2A-Version %q, want %s", r.Method, r.A2AVersion, build.Wire)
			}
		}
	}
	if calls == 0 {
		t.Fatal("the agent recorded no call")
	}
}
