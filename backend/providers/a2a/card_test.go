package a2a_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	a2aprovider "github.com/harness-edge/harness-edge/backend/providers/a2a"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// An agent that is down when the edge starts: the provider is listed with a stand-in manifest
// that declares no capability (a start requiring one fails its preflight), an execution started
// meanwhile fails with a clear message, and once the agent answers its card's manifest is
// registered without a restart.
func (s *suite) agentDownAtStartGetsAStandInManifestUntilTheCardArrives(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().(*net.TCPAddr)
	l.Close() // nothing listens there while the edge starts
	e := startEdge(t, t.TempDir(), a2aprovider.Config{URL: "http://" + addr.String(), CardTimeout: 200 * time.Millisecond})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	caps, err := e.client.ListCapabilities(ctx)
	if err != nil || len(caps) != 1 || len(caps[0].Capabilities) != 0 || !strings.Contains(caps[0].Name, "not read yet") {
		t.Fatalf("stand-in manifest = %+v, %v", caps, err)
	}
	_, err = e.client.StartExecution(ctx, api.StartExecutionRequest{ConversationID: e.newConversation(t), ProviderID: "agent",
		Input: "echo", RequiredCapabilities: &[]string{"event.streaming"}})
	if err == nil || !strings.Contains(err.Error(), "CAPABILITY_UNSUPPORTED") {
		t.Fatalf("a start requiring a capability: %v", err)
	}
	res, _ := e.run(t, "echo too early", nil)
	if res.Execution.State != api.ExecutionStateFailed || !strings.Contains(res.Execution.Error.Message, "has not answered with its agent card") {
		t.Fatalf("execution before the card = %s %+v", res.Execution.State, res.Execution.Error)
	}

	s.build.Start(t, "PORT="+strings.TrimPrefix(addr.String(), "127.0.0.1:"))
	for {
		caps, err = e.client.ListCapabilities(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if caps[0].Name == "Harness Edge Test Agent" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the card's manifest was never registered: %+v", caps)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if res, _ := e.run(t, "echo now", nil); res.Output != "Echo: now" {
		t.Fatalf("after the card: %s %q", res.Execution.State, res.Output)
	}
}

// The agent restarts and forgets its tasks (they were in its memory) while the edge relays one:
// the edge, following the task, hears from the agent that it does not know it (A2A's
// TaskNotFound) and fails the execution saying so, rather than wait for the agent to be
// unreachable for gone_timeout.
func (s *suite) agentThatForgotTheTaskFailsIt(t *testing.T) {
	agent := s.build.Start(t)
	e := startEdge(t, t.TempDir(), a2aprovider.Config{URL: agent.URL, GoneTimeout: 30 * time.Second})
	ctx := wait(t)
	exec, taskID := e.startSlowTask(t, ctx)
	agent.Kill()
	s.build.Start(t, "PORT="+agent.Port())
	final, err := e.client.WaitForTerminal(ctx, exec.ID)
	want := fmt.Sprintf("A2A agent %s no longer knows task %s", strings.TrimPrefix(agent.URL, "http://"), taskID)
	if err != nil {
		t.Fatal(err)
	}
	if final.State != api.ExecutionStateFailed || final.Error == nil || final.Error.Message != want {
		t.Fatalf("execution %s, error %+v; want failed: %s", final.State, final.Error, want)
	}
}
