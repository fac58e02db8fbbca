package acp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The JSON-RPC calls of a turn are children of the execution span, and the agent process gets
// the execution span's traceparent in TRACEPARENT.
func TestAgentCallsAreChildSpansAndTheAgentGetsTraceparent(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	agentLog := filepath.Join(t.TempDir(), "agent.log")
	built, err := New(Config{
		Command:       fixtureAgent,
		Env:           map[string]string{"ACP_FIXTURE_SCENARIO": "stream", "ACP_FIXTURE_LOG": agentLog},
		ShutdownGrace: Duration(testGrace),
	})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := local.Open(t.TempDir(), backend.Options{Providers: []backend.Provider{built}, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = rt.Close()
		built.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conv, err := rt.CreateConversation(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	exec, _, err := rt.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: built.Manifest().ID, Input: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range backend.FollowExecution(ctx, rt, exec.ID, 0) {
		if err != nil {
			t.Fatal(err)
		}
	}

	byName := map[string]sdktrace.ReadOnlySpan{}
	for ctx.Err() == nil { // the execution span ends right after its terminal event is published
		for _, s := range spans.Ended() {
			byName[s.Name()] = s
		}
		if byName["harness.execution"] != nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	execution := byName["harness.execution"]
	if execution == nil {
		t.Fatal("no execution span")
	}
	for _, method := range []string{"initialize", "session/new", "session/prompt"} {
		s := byName[method]
		if s == nil {
			t.Errorf("no span for %s among %v", method, names(spans.Ended()))
			continue
		}
		if s.Parent().SpanID() != execution.SpanContext().SpanID() || s.SpanContext().TraceID() != execution.SpanContext().TraceID() {
			t.Errorf("%s span's parent %v, want the execution span %v", method, s.Parent(), execution.SpanContext())
		}
	}
	if stop := attrOf(byName["session/prompt"], "acp.stop_reason"); stop != "end_turn" {
		t.Errorf("the turn's stop reason attribute = %q, want end_turn", stop)
	}

	want := "traceparent 00-" + execution.SpanContext().TraceID().String() + "-" + execution.SpanContext().SpanID().String() + "-01"
	log, err := os.ReadFile(agentLog)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), want+"\n") {
		t.Errorf("the agent did not see TRACEPARENT of the execution span (%q); it recorded:\n%s", want, log)
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

func attrOf(s sdktrace.ReadOnlySpan, key string) string {
	if s == nil {
		return ""
	}
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return a.Value.Emit()
		}
	}
	return ""
}
