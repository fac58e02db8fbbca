package a2a_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	a2aprovider "github.com/harness-edge/harness-edge/backend/providers/a2a"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The suite's scenarios of one task each (suite_test.go).

// The echo agent streams one working status message per word: each becomes one
// output.text.delta, in order, once; the task's ids come first as a provider.event.
func (s *suite) echoStreamsEveryMessageOnceInOrder(t *testing.T) {
	res, streamed := s.run(t, "echo hello A2A world", nil)
	if !res.Succeeded() || res.Output != "Echo: hello A2A world" {
		t.Fatalf("result = %s %q", res.Execution.State, res.Output)
	}
	want := []string{"Echo:", " hello", " A2A", " world"}
	if !slices.Equal(streamed, want) {
		t.Fatalf("SDK stream deltas = %q, want %q", streamed, want)
	}
	events := s.events(t, res.Execution.ID)
	wantTypes := []string{"run.queued", "run.started", "provider.event", "output.text.delta", "output.text.delta",
		"output.text.delta", "output.text.delta", "output.text.done", "run.completed"}
	if !slices.Equal(types(events), wantTypes) {
		t.Fatalf("events = %v\nwant %v", types(events), wantTypes)
	}
	if task := taskEvent(t, events); task["taskId"] == "" || task["contextId"] == "" {
		t.Fatalf("task event = %v", task)
	}
}

// An agent that does not stream is followed by polling its task (event.streaming emulated).
func (s *suite) agentWithoutStreamingIsPolled(t *testing.T) {
	e := startEdge(t, t.TempDir(), a2aprovider.Config{URL: s.cut.url() + "/polled"})
	caps, err := e.client.ListCapabilities(wait(t))
	if err != nil || len(caps) != 1 || caps[0].Capabilities["event.streaming"] != api.SupportLevelEmulated {
		t.Fatalf("capabilities = %+v, %v", caps, err)
	}
	res, streamed := e.run(t, "echo polled words", nil)
	if !res.Succeeded() || res.Output != "Echo: polled words" || strings.Join(streamed, "") != res.Output {
		t.Fatalf("result = %s %q, streamed %q", res.Execution.State, res.Output, streamed)
	}
}

// input-required becomes an input action whose description is the agent's question; the
// answer goes back as the task's next message and the task continues.
func (s *suite) inputRequiredIsAnActionAnsweredAsTheNextMessage(t *testing.T) {
	var asked []api.ActionRequest
	res, _ := s.run(t, "ask", func(req api.ActionRequest) (api.ActionResponse, error) {
		asked = append(asked, req)
		var v api.JSONValue = "Ada"
		return api.ActionResponse{Value: &v}, nil
	})
	if !res.Succeeded() || res.Output != "Hello, Ada!" {
		t.Fatalf("result = %s %q", res.Execution.State, res.Output)
	}
	if len(asked) != 1 || asked[0].Kind != api.ActionKindInput || asked[0].Description == nil ||
		*asked[0].Description != "What is your name?" || asked[0].Title != "Input requested by Harness Edge Test Agent" {
		t.Fatalf("actions = %+v", asked)
	}
	if asked[0].Payload["a2aTaskId"] == "" || asked[0].Payload["question"] != "What is your name?" {
		t.Fatalf("payload = %v", asked[0].Payload)
	}
	wantTypes := []string{"run.queued", "run.started", "provider.event", "action.required", "action.responded",
		"output.text.delta", "output.text.done", "run.completed"}
	if got := types(s.events(t, res.Execution.ID)); !slices.Equal(got, wantTypes) {
		t.Fatalf("events = %v\nwant %v", got, wantTypes)
	}
}

// A declined input cancels the task and fails the execution with a clear message.
func (s *suite) declinedInputFails(t *testing.T) {
	res, _ := s.run(t, "ask", func(api.ActionRequest) (api.ActionResponse, error) {
		return api.ActionResponse{Approved: new(false)}, nil
	})
	if res.Execution.State != api.ExecutionStateFailed || res.Execution.Error == nil ||
		!strings.Contains(res.Execution.Error.Message, "was declined") {
		t.Fatalf("execution = %s %+v", res.Execution.State, res.Execution.Error)
	}
	events := s.events(t, res.Execution.ID)
	if got := s.agent.TaskState(t, taskEvent(t, events)["taskId"].(string)); got != a2a.TaskStateCanceled {
		t.Fatalf("agent's task = %s, want canceled", got)
	}
}

// An artifact becomes an artifact.created descriptor (no bytes), listed by the edge.
func (s *suite) artifactBecomesADescriptor(t *testing.T) {
	res, _ := s.run(t, "artifact", nil)
	if !res.Succeeded() || res.Output != "Report ready." {
		t.Fatalf("result = %s %q", res.Execution.State, res.Output)
	}
	artifacts, err := s.client.ListArtifacts(wait(t), res.Execution.ID)
	if err != nil || len(artifacts) != 1 {
		t.Fatalf("artifacts = %+v, %v", artifacts, err)
	}
	a := artifacts[0]
	if a.ID != "report-1" || a.Name != "report.txt" || a.MediaType != "text/plain" || a.URI != nil {
		t.Fatalf("artifact = %+v", a)
	}
	m := a.Metadata
	if m["a2aArtifactId"] != "report-1" || m["description"] != "A short report" || m["a2aTaskId"] == "" ||
		fmt.Sprint(m["parts"]) != "[map[kind:text]]" {
		t.Fatalf("artifact metadata = %v", m)
	}
	wantTypes := []string{"run.queued", "run.started", "provider.event", "artifact.created", "output.text.delta",
		"output.text.done", "run.completed"}
	if got := types(s.events(t, res.Execution.ID)); !slices.Equal(got, wantTypes) {
		t.Fatalf("events = %v\nwant %v", got, wantTypes)
	}
}

// failed fails the execution with the agent's message; auth-required fails it with what to
// configure.
func (s *suite) failedAndAuthRequiredFail(t *testing.T) {
	host := strings.TrimPrefix(s.cut.url(), "http://")
	res, streamed := s.run(t, "fail", nil)
	want := fmt.Sprintf("A2A agent %s failed the task: Something broke", host)
	if res.Execution.State != api.ExecutionStateFailed || res.Execution.Error == nil || res.Execution.Error.Message != want {
		t.Fatalf("execution = %s %+v, want message %q", res.Execution.State, res.Execution.Error, want)
	}
	if !slices.Equal(streamed, []string{"Working..."}) {
		t.Fatalf("deltas = %q", streamed)
	}

	res, _ = s.run(t, "auth", nil)
	if res.Execution.State != api.ExecutionStateFailed || res.Execution.Error == nil ||
		!strings.Contains(res.Execution.Error.Message, "asked for authentication (auth-required)") ||
		!strings.HasSuffix(res.Execution.Error.Message, ": Sign in first") {
		t.Fatalf("execution = %s %+v", res.Execution.State, res.Execution.Error)
	}
}

// :cancel cancels the agent's task: the execution ends cancelled, and so does the task.
func (s *suite) cancelCancelsTheTask(t *testing.T) {
	ctx := wait(t)
	exec, taskID := s.startSlowTask(t, ctx)
	cancelled, err := s.client.CancelExecution(ctx, exec.ID, api.CancelExecutionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	final, err := s.client.WaitForTerminal(ctx, cancelled.ID)
	if err != nil || final.State != api.ExecutionStateCancelled {
		t.Fatalf("execution = %s, %v", final.State, err)
	}
	events := s.events(t, exec.ID)
	last := events[len(events)-1]
	data, _ := last.Data.AsRunCancelledData()
	if last.Type != api.StandardEventTypeRunCancelled || data.ProviderCleanupError != nil {
		t.Fatalf("last event = %s %+v", last.Type, data)
	}
	if got := s.agent.TaskState(t, taskID); got != a2a.TaskStateCanceled {
		t.Fatalf("agent's task = %s, want canceled", got)
	}
}

// Executions of one conversation continue one A2A context; another conversation gets its own.
func (s *suite) conversationKeepsTheAgentsContext(t *testing.T) {
	conv := s.newConversation(t)
	for _, want := range []string{"Task 1 in this context", "Task 2 in this context"} {
		if res, _ := s.runIn(t, conv, "count", nil); res.Output != want {
			t.Fatalf("output = %q, want %q", res.Output, want)
		}
	}
	if res, _ := s.run(t, "count", nil); res.Output != "Task 1 in this context" {
		t.Fatalf("a new conversation: output = %q", res.Output)
	}
}

// The manifest is the agent card's: name, version, streaming, skills as metadata, and the A2A
// version spoken.
func (s *suite) manifestFromAgentCard(t *testing.T) {
	// The card's own URL works as well as the base URL.
	e := startEdge(t, t.TempDir(), a2aprovider.Config{ID: "helper", URL: s.cut.url() + "/.well-known/agent-card.json"})
	caps, err := e.client.ListCapabilities(context.Background())
	if err != nil || len(caps) != 1 {
		t.Fatalf("capabilities = %+v, %v", caps, err)
	}
	m := caps[0]
	if m.ID != "helper" || m.Name != "Harness Edge Test Agent" || m.Version != "1.0.0" ||
		!slices.Equal(m.Topologies, []api.RuntimeTopology{api.RuntimeTopologyRemote}) {
		t.Fatalf("manifest = %+v", m)
	}
	for name, want := range map[string]api.SupportLevel{
		"event.streaming": api.SupportLevelNative, "action.input": api.SupportLevelNative,
		"execution.cancel": api.SupportLevelNative, "conversation.continuity": api.SupportLevelNative,
		"action.approval": api.SupportLevelUnsupported,
	} {
		if m.Capabilities[name] != want {
			t.Errorf("%s = %s, want %s", name, m.Capabilities[name], want)
		}
	}
	// The 0.3 agent's card says 0.3.0; the 1.x agent's interfaces say 1.0.
	wantVersion := map[string]string{"0.3": "0.3.0", "1.0": "1.0"}[s.build.Wire]
	md := *m.Metadata
	skills, _ := md["skills"].([]any)
	if md["a2aProtocolVersion"] != wantVersion || md["sdk"] != "github.com/a2aproject/a2a-go/v2" || len(skills) != 1 ||
		skills[0].(map[string]any)["id"] != "echo" || !slices.Equal(md["defaultInputModes"].([]any), []any{"text/plain"}) {
		t.Fatalf("metadata = %v, want a2aProtocolVersion %s", md, wantVersion)
	}
}
