package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// buildFixtureAgent builds the acp provider's scripted test agent next to the caddy binary.
func buildFixtureAgent(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fixture-agent")
	if out, err := exec.Command("go", "build", "-o", bin, "../../backend/providers/acp/testdata/fixture-agent").CombinedOutput(); err != nil {
		t.Fatalf("go build fixture-agent: %v\n%s", err, out)
	}
	return bin
}

// TestOneTraceFromCallerThroughTwoEdgesToTheAgent follows one SDK call, made under a span of
// the caller's, through two real servers exporting to a real OTLP/HTTP receiver: an edge
// (testdata/traced-edge.Caddyfile, no `tracing` directive) whose provider is `remote`, and its
// upstream (testdata/traced-upstream.Caddyfile, behind Caddy's `tracing`) whose provider is the
// repository's test ACP agent. Everything is one trace, linked parent to child:
//
//	caller ─ edge POST /v1/executions ─ edge harness.execution ─ upstream caddy POST /v1/executions
//	  ─ upstream harness.execution ─ initialize, session/new, session/prompt (and the agent's
//	  TRACEPARENT)
func TestOneTraceFromCallerThroughTwoEdgesToTheAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)
	agent := buildFixtureAgent(t)
	receiver := newOTLPReceiver(t)
	agentLog := filepath.Join(t.TempDir(), "agent.log")

	upstreamEnv := append(instanceEnv(t), receiver.tracingEnv("upstream")...)
	upstreamEnv = append(upstreamEnv, "ACP_FIXTURE_AGENT="+agent, "ACP_FIXTURE_LOG="+agentLog)
	upstream := startCaddyWith(t, bin, upstreamEnv, "testdata/traced-upstream.Caddyfile")
	edgeEnv := append(instanceEnv(t), receiver.tracingEnv("edge")...)
	edgeEnv = append(edgeEnv, "HARNESS_UPSTREAM_URL="+upstream.url)
	edge := startCaddyWith(t, bin, edgeEnv, "testdata/traced-edge.Caddyfile")

	// The caller: a program with its own tracer provider; its span is the root of the trace.
	callerSpans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(callerSpans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ctx, caller := tp.Tracer("caller").Start(ctx, "caller")
	client, err := sdk.New(edge.url)
	if err != nil {
		t.Fatal(err)
	}
	conv, err := client.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := client.Run(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "agent", Input: "hi"}, sdk.RunHandlers{})
	caller.End()
	if err != nil || !res.Succeeded() {
		t.Fatalf("Run = %+v, %v", res.Execution, err)
	}
	traceID := caller.SpanContext().TraceID().String()

	inTrace := func(service, name string) func(receivedSpan) bool {
		return func(s receivedSpan) bool { return s.traceID == traceID && s.service == service && s.name == name }
	}
	ended := func(service string) func() bool {
		return func() bool {
			for _, s := range receiver.find(inTrace(service, "harness.execution")) {
				if s.attrs["harness.execution.state"] == "succeeded" {
					return true
				}
			}
			return false
		}
	}
	receiver.await("the edge's execution span", ended("edge"))
	receiver.await("the upstream's execution span", ended("upstream"))
	receiver.await("the agent's prompt turn", func() bool { return len(receiver.find(inTrace("upstream", "session/prompt"))) == 1 })
	// Caddy's span of the upstream's start request ends after its answer is written, and its
	// batch may be exported after the agent's spans: under load it arrives later.
	receiver.await("Caddy's span of the upstream's start", func() bool {
		return len(receiver.find(inTrace("upstream", "caddy POST /v1/executions"))) >= 1
	})

	one := func(service, name string) receivedSpan {
		t.Helper()
		found := receiver.find(inTrace(service, name))
		if len(found) != 1 {
			t.Fatalf("%d %s spans named %q in the caller's trace, want 1", len(found), service, name)
		}
		return found[0]
	}
	edgeStart := one("edge", "POST /v1/executions")
	if edgeStart.parentID != caller.SpanContext().SpanID().String() || edgeStart.kind != "SPAN_KIND_SERVER" {
		t.Errorf("edge start request: parent %s kind %s, want the caller's span %s, server", edgeStart.parentID, edgeStart.kind, caller.SpanContext().SpanID())
	}
	edgeExec := one("edge", "harness.execution")
	if edgeExec.parentID != edgeStart.spanID {
		t.Errorf("edge execution span's parent %s, want the start request's %s", edgeExec.parentID, edgeStart.spanID)
	}
	wantAttrs := map[string]string{"harness.execution.id": res.Execution.ID, "harness.provider.id": "agent",
		"harness.tenant": "", "harness.execution.state": "succeeded"}
	for k, v := range wantAttrs {
		if got, ok := edgeExec.attrs[k]; !ok || got != v {
			t.Errorf("edge execution span: %s = %q, want %q", k, got, v)
		}
	}
	events, err := client.ListEvents(ctx, res.Execution.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(edgeExec.events) != len(events.Events) {
		t.Errorf("edge execution span has %d events, the execution %d", len(edgeExec.events), len(events.Events))
	} else {
		for i, e := range events.Events {
			if got := edgeExec.events[i]; got.name != string(e.Type) || got.attrs["harness.event.sequence"] != strconv.FormatInt(e.Sequence, 10) {
				t.Errorf("span event %d = %s %v, want %s sequence %d", i, got.name, got.attrs, e.Type, e.Sequence)
			}
		}
	}

	// The upstream: Caddy's `tracing` span of the remote provider's start request is a child of
	// the edge's execution span, and the upstream's execution span a child of that.
	upExec := one("upstream", "harness.execution")
	upStart := one("upstream", "caddy POST /v1/executions")
	if upExec.parentID != upStart.spanID {
		t.Fatalf("the upstream's execution span's parent %s is not Caddy's tracing span of the start %s", upExec.parentID, upStart.spanID)
	}
	if upStart.parentID != edgeExec.spanID {
		t.Errorf("the upstream request's parent %s, want the edge's execution span %s", upStart.parentID, edgeExec.spanID)
	}
	if upExec.attrs["harness.provider.id"] != "agent" || upExec.attrs["harness.execution.state"] != "succeeded" {
		t.Errorf("upstream execution span attributes %v", upExec.attrs)
	}
	for _, method := range []string{"initialize", "session/new", "session/prompt"} {
		if s := one("upstream", method); s.parentID != upExec.spanID || s.kind != "SPAN_KIND_CLIENT" {
			t.Errorf("%s: parent %s kind %s, want the upstream execution span %s, client", method, s.parentID, s.kind, upExec.spanID)
		}
	}
	log, err := os.ReadFile(agentLog)
	if err != nil {
		t.Fatal(err)
	}
	want := "traceparent 00-" + traceID + "-" + upExec.spanID + "-01"
	if !slices.Contains(strings.Split(string(log), "\n"), want) {
		t.Errorf("the agent did not get TRACEPARENT of the upstream execution span (%s); it recorded:\n%s", want, log)
	}
	logTrace(t, receiver, traceID)
	callerSpan := callerSpans.Ended()[0]
	writeTracePicture(t, receiver, traceID, caller.SpanContext().SpanID().String(),
		uint64(callerSpan.StartTime().UnixNano()), uint64(callerSpan.EndTime().UnixNano()))
	edge.stop(t)
	upstream.stop(t)
}

// logTrace logs the spans of a trace received so far, one line each: what an operator's
// tracing UI would draw.
func logTrace(t *testing.T, receiver *otlpReceiver, traceID string) {
	spans := receiver.find(func(s receivedSpan) bool { return s.traceID == traceID })
	var lines []string
	for _, s := range spans {
		lines = append(lines, fmt.Sprintf("%-9s %-48s span %s parent %s %d events", s.service, s.name, s.spanID, s.parentID, len(s.events)))
	}
	t.Logf("trace %s, %d spans:\n%s", traceID, len(spans), strings.Join(lines, "\n"))
}

// startTracedClusterNode is startClusterNode exporting its traces to receiver as service name.
func startTracedClusterNode(t *testing.T, bin string, as *syscall.Credential, dsn, name string, receiver *otlpReceiver) *clusterNode {
	t.Helper()
	in := newExampleInstance(t, bin, as)
	in.plain("mock")
	in.env = append(in.env, "HARNESS_DATABASE_URL="+dsn, "HARNESS_NODE="+name, "HARNESS_LEASE=10s")
	in.env = append(in.env, receiver.tracingEnv("node-"+name)...)
	srv, _ := in.start(clusterCaddyfile)
	return &clusterNode{name: name, base: in.base, srv: srv}
}

// TestCommandsAcrossNodesJoinTheCallersTrace: two real nodes of examples/cluster.Caddyfile,
// unchanged, on one PostgreSQL, exporting to the OTLP receiver. An execution starts on node a;
// under one caller span its action is answered and another execution is cancelled at node b,
// which posts both as commands to a: a's work on them is in the caller's trace, a child of b's.
func TestCommandsAcrossNodesJoinTheCallersTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary and PostgreSQL; run without -short")
	}
	dsn := clusterDatabase(t)
	bin := buildCaddy(t)
	as := unprivilegedUser(t, bin)
	receiver := newOTLPReceiver(t)
	a := startTracedClusterNode(t, bin, as, dsn, "a", receiver)
	b := startTracedClusterNode(t, bin, as, dsn, "b", receiver)

	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ctx, caller := tp.Tracer("caller").Start(ctx, "caller")
	atA, err := sdk.New(a.base)
	if err != nil {
		t.Fatal(err)
	}
	atB, err := sdk.New(b.base)
	if err != nil {
		t.Fatal(err)
	}
	conv, err := atA.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	start := func() api.Execution {
		x, err := atA.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock",
			Input: "across nodes", Config: api.JSONObject{"requireApproval": true}})
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	awaitAction := func(id string) string {
		for ev, err := range atB.Events(ctx, id, 0) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Type == api.StandardEventTypeActionRequired {
				return actionID(t, ev)
			}
		}
		t.Fatalf("no action.required for %s", id)
		return ""
	}
	answered, cancelled := start(), start()
	if _, err := atB.RespondToAction(ctx, answered.ID, awaitAction(answered.ID), api.ActionResponse{Approved: new(true)}); err != nil {
		t.Fatal(err)
	}
	awaitAction(cancelled.ID)
	if _, err := atB.CancelExecution(ctx, cancelled.ID, api.CancelExecutionRequest{}); err != nil {
		t.Fatal(err)
	}
	caller.End()
	traceID := caller.SpanContext().TraceID().String()

	for _, kind := range []string{"respond", "cancel"} {
		name := "harness.command " + kind
		var posted, ran []receivedSpan
		receiver.await("both sides of the "+kind+" command", func() bool {
			posted = receiver.find(func(s receivedSpan) bool { return s.traceID == traceID && s.service == "node-b" && s.name == name })
			ran = receiver.find(func(s receivedSpan) bool { return s.traceID == traceID && s.service == "node-a" && s.name == name })
			return len(posted) == 1 && len(ran) == 1
		})
		if ran[0].parentID != posted[0].spanID || posted[0].kind != "SPAN_KIND_PRODUCER" || ran[0].kind != "SPAN_KIND_CONSUMER" {
			t.Errorf("%s: node a's span (%s, parent %s) is not the consumer child of node b's (%s, %s)",
				kind, ran[0].kind, ran[0].parentID, posted[0].kind, posted[0].spanID)
		}
		requests := receiver.find(func(s receivedSpan) bool { return s.spanID == posted[0].parentID })
		if len(requests) != 1 || requests[0].service != "node-b" || requests[0].parentID != caller.SpanContext().SpanID().String() {
			t.Errorf("%s: node b's command span is not inside its request span under the caller's: %+v", kind, requests)
		}
	}
	// The executions ran on a, in the same trace, and ended as the commands made them.
	receiver.await("both execution spans on node a", func() bool {
		return len(receiver.find(func(s receivedSpan) bool {
			return s.traceID == traceID && s.service == "node-a" && s.name == "harness.execution" &&
				(s.attrs["harness.execution.state"] == "succeeded" || s.attrs["harness.execution.state"] == "cancelled")
		})) == 2
	})
	logTrace(t, receiver, traceID)
	a.srv.stop(t)
	b.srv.stop(t)
}
