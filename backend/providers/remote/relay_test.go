package remote_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/providers/remote"
	"github.com/harness-edge/harness-edge/conformance"
	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// TestConformanceThroughTheEdge runs the whole portable suite against the edge, whose provider
// "mock" is the upstream's mock: every scenario (approval, input, artifacts, denial,
// cancellation included) and every HTTP case passes, none skipped.
func TestConformanceThroughTheEdge(t *testing.T) {
	u := startUpstream(t)
	e := startEdge(t, t.TempDir(), remote.Config{UpstreamURL: u.url, UpstreamProvider: "mock"})
	rep, err := conformance.Run(context.Background(), conformance.Options{BaseURL: e.url, ProviderID: "mock"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Checks {
		if !c.Passed || c.Skipped {
			t.Errorf("%s", c)
		}
	}
	if len(rep.Checks) < 80 {
		t.Errorf("only %d checks ran", len(rep.Checks))
	}
	t.Log(rep.Summary())
}

// TestRelayThroughFaults puts a fault-injecting proxy between edge and upstream: every event
// stream is cut after a few hundred bytes, every third other request answers 503, the first
// start and the first action answer reach the upstream but lose their answer. Every upstream
// event is still relayed exactly once, in order, and each local execution has exactly one
// upstream execution; the approval answered at the edge is seen upstream once.
func TestRelayThroughFaults(t *testing.T) {
	u := startUpstream(t)
	fp, proxyURL := newFaultProxy(t, u.url)
	e := startEdge(t, t.TempDir(), remote.Config{UpstreamURL: proxyURL, UpstreamProvider: "mock"})
	fp.set(func(p *faultProxy) {
		p.cutStreamsAfter, p.fail503Every, p.dropStarts, p.dropResponds = 450, 3, 1, 1
	})

	cases := []struct {
		input  string
		config api.JSONObject
	}{
		{"one two three four five six seven eight nine ten eleven twelve", api.JSONObject{"delayMs": 5}},
		{"approve this deployment to production now please", api.JSONObject{"requireApproval": true, "delayMs": 5}},
		{"write the artifact for me", api.JSONObject{"artifactName": "notes.txt", "delayMs": 5}},
		{"give me input", api.JSONObject{"requestInput": true}},
		// The upstream's usage, relayed as this edge's own report: exact despite the cuts.
		{"count what these words cost", api.JSONObject{"delayMs": 5, "usage": map[string]any{"inputTokens": 3, "outputTokens": 1, "cost": "0.001", "currency": "USD"}}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, tc := range cases {
		conv, err := e.client.CreateConversation(ctx, api.CreateConversationRequest{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.client.Run(ctx, api.StartExecutionRequest{
			ConversationID: conv.ID, ProviderID: "mock", Input: tc.input, Config: tc.config,
		}, sdk.RunHandlers{OnAction: func(_ context.Context, a api.ActionRequest) (api.ActionResponse, error) {
			if a.Kind == api.ActionKindInput {
				return api.ActionResponse{Value: new(api.JSONValue("typed at the edge"))}, nil
			}
			return api.ActionResponse{Approved: new(true)}, nil
		}})
		if err != nil {
			t.Fatalf("%q: %v", tc.input, err)
		}
		if !res.Succeeded() {
			t.Fatalf("%q ended %s: %+v", tc.input, res.Execution.State, res.Execution.Error)
		}
		upID := u.executionFor(t, tc.input)
		local := allEvents(t, e.client, res.Execution.ID)
		upstream := allEvents(t, upstreamClient(t, u), upID)
		sameRelay(t, local, upstream)
		if up, err := upstreamClient(t, u).GetExecution(ctx, upID); err != nil || jsonOf(up.Usage) != jsonOf(res.Execution.Usage) {
			t.Errorf("%q: usage here %s, upstream %s (%v)", tc.input, jsonOf(res.Execution.Usage), jsonOf(up.Usage), err)
		} else if tc.config["usage"] != nil && jsonOf(up.Usage) != `{"cost":{"amount":"0.006","currency":"USD"},"inputTokens":18,"outputTokens":6,"totalTokens":24}` {
			t.Errorf("%q: upstream usage %s", tc.input, jsonOf(up.Usage))
		}
		if tc.config["requestInput"] == true && !strings.HasSuffix(res.Output, "typed at the edge") {
			t.Errorf("the input answered at the edge did not reach the upstream: output %q", res.Output)
		}
		responded := 0
		for _, ev := range upstream {
			if ev.Type == api.StandardEventTypeActionResponded {
				responded++
			}
		}
		if wantActions := tc.config["requireApproval"] == true || tc.config["requestInput"] == true; wantActions && responded != 1 {
			t.Errorf("%q: the upstream saw %d answers, want 1", tc.input, responded)
		}
	}
	if n := len(u.executions()); n != len(cases) {
		t.Errorf("the upstream ran %d executions for %d local ones", n, len(cases))
	}
	fp.mu.Lock()
	defer fp.mu.Unlock()
	if fp.cuts == 0 || fp.unavailable == 0 || fp.droppedStarts == 0 || fp.droppedResponds == 0 {
		t.Errorf("faults not exercised: %d cuts, %d 503s, %d dropped starts, %d dropped answers",
			fp.cuts, fp.unavailable, fp.droppedStarts, fp.droppedResponds)
	}
	t.Logf("%d requests, %d streams cut, %d 503s", fp.requests, fp.cuts, fp.unavailable)
}

// TestCancelThroughTheEdge: a local :cancel ends the upstream execution too, and the cleanup
// reports no error.
func TestCancelThroughTheEdge(t *testing.T) {
	u := startUpstream(t)
	e := startEdge(t, t.TempDir(), remote.Config{UpstreamURL: u.url, UpstreamProvider: "mock"})
	input := "a long answer that takes its time to arrive word by word"
	exec := e.start(t, input, api.JSONObject{"delayMs": 300})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	firstDelta(t, ctx, e.client, exec.ID)
	final, err := e.client.CancelExecution(ctx, exec.ID, api.CancelExecutionRequest{Reason: new("changed my mind")})
	if err != nil {
		t.Fatal(err)
	}
	if final.State != api.ExecutionStateCancelled {
		t.Fatalf("local state %s", final.State)
	}
	events := allEvents(t, e.client, exec.ID)
	if last := events[len(events)-1]; typed(last.Data.AsRunCancelledData()).ProviderCleanupError != nil || deref(typed(last.Data.AsRunCancelledData()).Reason) != "changed my mind" {
		t.Errorf("run.cancelled data %v", last.Data)
	}
	up, err := upstreamClient(t, u).GetExecution(ctx, u.executionFor(t, input))
	if err != nil {
		t.Fatal(err)
	}
	if up.State != api.ExecutionStateCancelled {
		t.Errorf("upstream execution is %s after a local cancel, want cancelled", up.State)
	}
}

// TestUpstreamOutcomes: failures at the upstream fail the local execution with a message that
// names the upstream; a cancellation nobody asked for here is a clear failure too.
func TestUpstreamOutcomes(t *testing.T) {
	u := startUpstream(t)
	e := startEdge(t, t.TempDir(), remote.Config{UpstreamURL: u.url, UpstreamProvider: "mock"})
	host := strings.TrimPrefix(u.url, "http://")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("denied", func(t *testing.T) {
		conv, _ := e.client.CreateConversation(ctx, api.CreateConversationRequest{})
		res, err := e.client.Run(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "deny me",
			Config: api.JSONObject{"requireApproval": true}},
			sdk.RunHandlers{OnAction: func(context.Context, api.ActionRequest) (api.ActionResponse, error) {
				return api.ActionResponse{Approved: new(false)}, nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		want := "Upstream " + host + " failed the execution: Mock execution was not approved"
		if res.Execution.State != api.ExecutionStateFailed || res.Execution.Error == nil || res.Execution.Error.Message != want {
			t.Fatalf("got %s %+v, want failed %q", res.Execution.State, res.Execution.Error, want)
		}
	})

	t.Run("cancelled upstream", func(t *testing.T) {
		input := "cancelled behind the edge's back"
		exec := e.start(t, input, api.JSONObject{"requireApproval": true})
		waitState(t, e.client, exec.ID, api.ExecutionStateAwaitingApproval)
		if _, err := upstreamClient(t, u).CancelExecution(ctx, u.executionFor(t, input), api.CancelExecutionRequest{Reason: new("operator stop")}); err != nil {
			t.Fatal(err)
		}
		final, err := e.client.WaitForTerminal(ctx, exec.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := "Upstream " + host + " cancelled the execution: operator stop"
		if final.State != api.ExecutionStateFailed || final.Error.Message != want {
			t.Fatalf("got %s %+v, want failed %q", final.State, final.Error, want)
		}
	})

	t.Run("answered upstream", func(t *testing.T) {
		input := "answered at the upstream directly"
		exec := e.start(t, input, api.JSONObject{"requireApproval": true})
		waitState(t, e.client, exec.ID, api.ExecutionStateAwaitingApproval)
		uc := upstreamClient(t, u)
		upID := u.executionFor(t, input)
		page, err := uc.ListEvents(ctx, upID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		var actionID string
		for _, ev := range page.Events {
			if ev.Type == api.StandardEventTypeActionRequired {
				actionID = typed(ev.Data.AsActionRequest()).ID
			}
		}
		if _, err := uc.RespondToAction(ctx, upID, actionID, api.ActionResponse{Approved: new(true)}); err != nil {
			t.Fatal(err)
		}
		final, err := e.client.WaitForTerminal(ctx, exec.ID)
		if err != nil {
			t.Fatal(err)
		}
		if final.State != api.ExecutionStateSucceeded {
			t.Fatalf("got %s %+v", final.State, final.Error)
		}
		sameRelay(t, allEvents(t, e.client, exec.ID), allEvents(t, uc, upID))
	})
}

// TestUpstreamErrorBodiesStayUpstream: a 500 with an HTML body holding a secret fails the
// execution with a message naming the upstream and the status, never the body.
func TestUpstreamErrorBodiesStayUpstream(t *testing.T) {
	u := startUpstream(t)
	fp, proxyURL := newFaultProxy(t, u.url)
	fp.set(func(p *faultProxy) { p.leakyErrors = true })
	e := startEdge(t, t.TempDir(), remote.Config{UpstreamURL: proxyURL, UpstreamProvider: "mock",
		Retry: sdk.RetryPolicy{MaxAttempts: 1}})
	exec := e.start(t, "hello", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	final, err := e.client.WaitForTerminal(ctx, exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if final.State != api.ExecutionStateFailed {
		t.Fatalf("state %s", final.State)
	}
	msg := final.Error.Message
	if strings.Contains(msg, "SECRET") || strings.Contains(msg, "/srv/") || !strings.Contains(msg, "500") || !strings.Contains(msg, "Upstream 127.0.0.1") {
		t.Errorf("message %q", msg)
	}
}

// TestUpstreamGone: an upstream that stops answering for longer than upstream_gone_timeout
// fails the execution with a clear message.
func TestUpstreamGone(t *testing.T) {
	u := startUpstream(t)
	fp, proxyURL := newFaultProxy(t, u.url)
	e := startEdge(t, t.TempDir(), remote.Config{UpstreamURL: proxyURL, UpstreamProvider: "mock", GoneTimeout: 700 * time.Millisecond})
	exec := e.start(t, "slow words that never all arrive at the edge", api.JSONObject{"delayMs": 300})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	firstDelta(t, ctx, e.client, exec.ID)
	fp.set(func(p *faultProxy) { p.down = true })
	final, err := e.client.WaitForTerminal(ctx, exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := "Upstream " + strings.TrimPrefix(proxyURL, "http://") + " was unreachable for longer than 700ms"
	if final.State != api.ExecutionStateFailed || final.Error.Message != want {
		t.Fatalf("got %s %+v, want failed %q", final.State, final.Error, want)
	}
}

// TestManifestArrivesLater: with the upstream down at start the edge starts anyway, lists a
// stand-in manifest that promises nothing, and registers the upstream's real manifest as soon
// as the background retry reads it.
func TestManifestArrivesLater(t *testing.T) {
	u := startUpstream(t)
	fp, proxyURL := newFaultProxy(t, u.url)
	fp.set(func(p *faultProxy) { p.down = true })
	e := startEdge(t, t.TempDir(), remote.Config{UpstreamURL: proxyURL, UpstreamProvider: "mock", ManifestTimeout: 200 * time.Millisecond})
	m := e.rt.Capabilities()
	if len(m) != 1 || m[0].ID != "mock" || len(m[0].Capabilities) != 0 || m[0].Topologies[0] != api.RuntimeTopologyRemote {
		t.Fatalf("stand-in manifest %+v", m)
	}
	fp.set(func(p *faultProxy) { p.down = false })
	deadline := time.Now().Add(20 * time.Second)
	for {
		m = e.rt.Capabilities()
		if len(m[0].Capabilities) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the upstream's manifest was never registered")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if m[0].Capabilities["action.approval"] != api.SupportLevelNative || m[0].Topologies[0] != api.RuntimeTopologyRemote || m[0].Name != "Deterministic Mock Provider" {
		t.Errorf("manifest %+v", m[0])
	}
}

// TestAllUpstreamProviders: without upstream_provider every upstream provider is served.
func TestAllUpstreamProviders(t *testing.T) {
	u := startUpstream(t)
	e := startEdge(t, t.TempDir(), remote.Config{UpstreamURL: u.url})
	m := e.rt.Capabilities()
	if len(m) != 1 || m[0].ID != "mock" {
		t.Fatalf("manifests %+v", m)
	}
}

// TestRenamedProvider: id serves the upstream provider under another local id, and two local
// executions of one local conversation share one upstream conversation.
func TestRenamedProvider(t *testing.T) {
	u := startUpstream(t)
	e := startEdge(t, t.TempDir(), remote.Config{UpstreamURL: u.url, UpstreamProvider: "mock", ID: "echo"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conv, err := e.client.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	convs := map[string]bool{}
	for _, input := range []string{"first turn", "second turn"} {
		res, err := e.client.Run(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "echo", Input: input}, sdk.RunHandlers{})
		if err != nil || !res.Succeeded() {
			t.Fatalf("%v %+v", err, res.Execution)
		}
		up, err := upstreamClient(t, u).GetExecution(ctx, u.executionFor(t, input))
		if err != nil {
			t.Fatal(err)
		}
		convs[up.ConversationID] = true
	}
	if len(convs) != 1 {
		t.Errorf("one local conversation became %d upstream conversations", len(convs))
	}
}

func waitState(t *testing.T, c *sdk.Client, id string, want api.ExecutionState) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		exec, err := c.GetExecution(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if exec.State == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s stayed %s, want %s", id, exec.State, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// firstDelta waits for the execution's first text delta.
func firstDelta(t *testing.T, ctx context.Context, c *sdk.Client, id string) {
	t.Helper()
	for ev, err := range c.Events(ctx, id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == api.StandardEventTypeOutputTextDelta {
			return
		}
	}
	t.Fatalf("%s ended without a text delta", id)
}

// TestUpstreamIdempotencyKey: the upstream execution was started with the key derived from the
// local execution id, so starting it again (an edge restarted before it recorded the upstream
// execution does exactly that) finds the same upstream execution instead of a second one.
func TestUpstreamIdempotencyKey(t *testing.T) {
	u := startUpstream(t)
	e := startEdge(t, t.TempDir(), remote.Config{UpstreamURL: u.url, UpstreamProvider: "mock"})
	input := "started once"
	exec := e.start(t, input, nil)
	allEvents(t, e.client, exec.ID)
	uc := upstreamClient(t, u)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	upID := u.executionFor(t, input)
	up, err := uc.GetExecution(ctx, upID)
	if err != nil {
		t.Fatal(err)
	}
	again, err := uc.StartExecution(ctx, api.StartExecutionRequest{ConversationID: up.ConversationID, ProviderID: "mock",
		Input: input, Config: api.JSONObject{}, IdempotencyKey: new(remote.IdempotencyKey(exec.ID))})
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != upID || len(u.executions()) != 1 {
		t.Fatalf("a repeated start made %s (upstream ran %d), want the first, %s", again.ID, len(u.executions()), upID)
	}
}

func jsonOf(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}
