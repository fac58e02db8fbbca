package a2a_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/harness-edge/harness-edge/backend"
	a2aprovider "github.com/harness-edge/harness-edge/backend/providers/a2a"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// What reaches the agent with each request (the agent records it: a2atest.Agent.Requests): the
// configured credentials, the execution's trace context, the A2A version spoken.

// Every request to the agent — the card, each call, each stream — carries the configured bearer
// token and header.
func (s *suite) credentialsReachTheAgent(t *testing.T) {
	before := len(s.agent.Requests(t))
	e := startEdge(t, t.TempDir(), a2aprovider.Config{
		URL: s.cut.url(), BearerToken: "secret-token", Headers: map[string]string{"X-Tenant": "acme"},
	})
	if res, _ := e.run(t, "echo credentials", nil); !res.Succeeded() {
		t.Fatalf("result = %s", res.Execution.State)
	}
	declined := func(api.ActionRequest) (api.ActionResponse, error) {
		return api.ActionResponse{Approved: new(false)}, nil
	}
	if res, _ := e.run(t, "ask", declined); res.Execution.State != api.ExecutionStateFailed {
		t.Fatalf("declined input: %s", res.Execution.State)
	}
	requests := s.agent.Requests(t)[before:]
	var methods []string
	for _, r := range requests {
		if r.Authorization != "Bearer secret-token" || r.Tenant != "acme" {
			t.Errorf("%s %s reached the agent with Authorization %q, X-Tenant %q", r.Path, r.Method, r.Authorization, r.Tenant)
		}
		methods = append(methods, r.Method)
	}
	if len(methods) == 0 || methods[0] != "" || !slices.Contains(methods, wireMethods[s.build.Wire].cancel) {
		t.Fatalf("requests = %q, want the card, then calls that include a cancellation", methods)
	}
}

// The call that sends an execution's message carries the execution span's traceparent, so an
// agent that traces continues the execution's trace.
func (s *suite) agentCallsCarryTheExecutionsTraceContext(t *testing.T) {
	res, _ := s.run(t, "echo traced", nil)
	if !res.Succeeded() {
		t.Fatalf("result = %s", res.Execution.State)
	}
	span := s.executionSpan(t, res.Execution.ID)
	want := "00-" + span.SpanContext().TraceID().String() + "-" + span.SpanContext().SpanID().String() + "-01"
	var methods []string
	for _, r := range s.agent.Requests(t) {
		if r.Traceparent == want {
			methods = append(methods, r.Method)
		}
	}
	if !slices.Contains(methods, wireMethods[s.build.Wire].stream) {
		t.Fatalf("calls carrying the execution's traceparent %s: %q; want its %s among them", want, methods, wireMethods[s.build.Wire].stream)
	}
}

// executionSpan is the ended span of an execution (it ends right after its terminal event).
func (s *suite) executionSpan(t *testing.T, executionID string) sdktrace.ReadOnlySpan {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for _, span := range s.spans.Ended() {
			for _, a := range span.Attributes() {
				if a.Key == backend.AttrExecutionID && a.Value.AsString() == executionID {
					return span
				}
			}
		}
	}
	t.Fatalf("no ended span for execution %s", executionID)
	return nil
}

// wireMethods are the JSON-RPC methods of each A2A version the provider calls.
var wireMethods = map[string]struct {
	stream, cancel string
	all            []string
}{
	"1.0": {"SendStreamingMessage", "CancelTask", []string{"SendStreamingMessage", "SendMessage", "GetTask", "CancelTask", "SubscribeToTask"}},
	"0.3": {"message/stream", "tasks/cancel", []string{"message/stream", "message/send", "tasks/get", "tasks/cancel", "tasks/resubscribe"}},
}

// The agent is spoken to in the best version its card offers (1.0 when it offers 1.0 and 0.3):
// every call so far is a method of that version with A2A-Version saying so, and the card was
// asked for with A2A-Version: 1.0 (so that an agent offering both lists both).
func (s *suite) agentIsSpokenToInItsBestVersion(t *testing.T) {
	if res, _ := s.run(t, "echo wire", nil); !res.Succeeded() {
		t.Fatalf("result = %s", res.Execution.State)
	}
	want := wireMethods[s.build.Wire]
	var seen []string
	for _, r := range s.agent.Requests(t) {
		switch {
		case r.Method == "":
			if !strings.HasSuffix(r.Path, "/agent-card.json") || r.A2AVersion != "1.0" {
				t.Errorf("card request %s with A2A-Version %q, want 1.0", r.Path, r.A2AVersion)
			}
		case !slices.Contains(want.all, r.Method) || r.A2AVersion != s.build.Wire:
			t.Errorf("call %s with A2A-Version %q; want A2A %s methods %v", r.Method, r.A2AVersion, s.build.Wire, want.all)
		default:
			seen = append(seen, r.Method)
		}
	}
	if !slices.Contains(seen, want.stream) {
		t.Fatalf("calls = %v, want %s among them", seen, want.stream)
	}
}
