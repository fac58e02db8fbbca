package main

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/conformance"
	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

const remoteCaddyfile = "../../examples/remote.Caddyfile"

// TestBinaryEdgeInFrontOfUpstream runs two real servers: an upstream from examples/Caddyfile and
// an edge from examples/remote.Caddyfile in front of it. The whole conformance suite passes
// through the edge; then the edge is killed with SIGKILL in the middle of an execution and
// started again on the same store: the client's stream resumes and ends with the upstream's
// run.completed, every text delta exactly once.
func TestBinaryEdgeInFrontOfUpstream(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)
	upstream := startCaddy(t, bin, instanceEnv(t))
	edgeEnv := append(instanceEnv(t), "HARNESS_UPSTREAM_URL="+upstream.url)
	edge := startCaddyWith(t, bin, edgeEnv, remoteCaddyfile)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := conformance.Run(ctx, conformance.Options{BaseURL: edge.url, ProviderID: "mock"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Checks {
		if !c.Passed || c.Skipped {
			t.Errorf("%s", c)
		}
	}
	t.Logf("conformance through the edge: %s", rep.Summary())

	client, err := sdk.New(edge.url, sdk.WithRetry(sdk.RetryPolicy{MinWait: 50 * time.Millisecond, MaxWait: 500 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	conv, err := client.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	input := strings.TrimSpace(strings.Repeat("relay ", 40))
	exec, err := client.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock",
		Input: input, Config: api.JSONObject{"delayMs": 40}})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	var last api.RuntimeEvent
	deltas, killed := 0, false
	for ev, err := range client.Events(ctx, exec.ID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		last = ev
		if ev.Type == api.StandardEventTypeOutputTextDelta {
			deltas++
			text.WriteString(typed(ev.Data.AsTextDeltaData()).Text)
		}
		if deltas == 5 && !killed {
			killed = true
			if err := edge.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-edge.exited
			edge = startCaddyWith(t, bin, edgeEnv, remoteCaddyfile)
		}
	}
	want := "Echo: " + input
	if last.Type != api.StandardEventTypeRunCompleted || typed(last.Data.AsRunCompletedData()).FinalOutput != want {
		t.Fatalf("the stream ended with %s %v, want run.completed with %q", last.Type, last.Data, want)
	}
	if text.String() != want {
		t.Fatalf("the deltas spell %q, want %q (a delta lost or repeated across the restart)", text.String(), want)
	}
	edge.stop(t)
	upstream.stop(t)
}
