package sdk_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The tests below put netProxy between the SDK and the real server and check that what a bad
// network does stays out of the caller's sight. The intervals are short so the suite is fast:
// the server sends a heartbeat every testHeartbeat and the client is told so, which makes a
// stream silent for 3·testHeartbeat dead. The contexts bound hangs (what the SDK did before
// these fixes); they are not speed checks.

const testHeartbeat = 200 * time.Millisecond

// Routes as netProxy names them.
const (
	routeStart        = "POST /v1/executions"
	routeGet          = "GET /v1/executions/{id}"
	routeCancel       = "POST /v1/executions/{id}:cancel"
	routeArtifacts    = "GET /v1/executions/{id}/artifacts"
	routeEventsJSON   = "GET /v1/executions/{id}/events"
	routeStream       = "GET /v1/executions/{id}/events SSE"
	routeStartStream  = "POST /v1/executions SSE" // Run's start, asking for the stream
	routeRespond      = "POST /v1/executions/{id}/actions/{id}:respond"
	routeCreateConv   = "POST /v1/conversations"
	routeGetConv      = "GET /v1/conversations/{id}"
	routeRuntime      = "GET /v1/runtime"
	routeCapabilities = "GET /v1/runtime/capabilities"
	routeHealth       = "GET /healthz"
)

// netRig is a server with short heartbeats, a netProxy in front of it, a client through the
// proxy and one straight to the server (to set things up and read the truth).
type netRig struct {
	srv    *testServer
	proxy  *netProxy
	client *sdk.Client
	direct *sdk.Client
	conv   string
}

func newNetRig(t *testing.T, opts ...sdk.Option) *netRig {
	t.Helper()
	srv := newTestServerWithHeartbeat(t, testHeartbeat)
	p := newNetProxy(t, srv.URL)
	direct := newClient(t, srv.URL)
	conv, err := direct.CreateConversation(t.Context(), api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]sdk.Option{sdk.WithHeartbeatInterval(testHeartbeat)}, opts...)
	return &netRig{srv: srv, proxy: p, client: newClient(t, p.URL, opts...), direct: direct, conv: conv.ID}
}

// bounded is t's context with a bound against hangs.
func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (g *netRig) startReq(config api.JSONObject) api.StartExecutionRequest {
	return api.StartExecutionRequest{ConversationID: g.conv, ProviderID: "mock", Input: "alpha beta gamma delta", Config: config}
}

var approve = sdk.RunHandlers{OnAction: func(context.Context, api.ActionRequest) (api.ActionResponse, error) {
	return api.ActionResponse{Approved: new(true)}, nil
}}

// run runs an execution that asks for approval through the proxy and checks that it
// succeeded and that the caller saw exactly the events the server stored, once each, in order.
func (g *netRig) run(t *testing.T, ctx context.Context) sdk.RunResult {
	t.Helper()
	var seen []api.RuntimeEvent
	handlers := approve
	handlers.OnEvent = func(e api.RuntimeEvent) { seen = append(seen, e) }
	res, err := g.client.Run(ctx, g.startReq(api.JSONObject{"requireApproval": true}), handlers)
	if err != nil {
		t.Fatalf("Run: %v (saw %d events)", err, len(seen))
	}
	if !res.Succeeded() || res.Output != "Echo: alpha beta gamma delta" {
		t.Fatalf("Run ended %s with %q", res.Execution.State, res.Output)
	}
	g.exactlyOnce(t, res.Execution.ID, seen)
	return res
}

func (g *netRig) exactlyOnce(t *testing.T, id string, seen []api.RuntimeEvent) {
	t.Helper()
	truth, err := g.direct.ListEvents(t.Context(), id, 0, 0)
	if err != nil || !reflect.DeepEqual(seen, truth.Events) {
		t.Fatalf("the caller saw %d events %v, the server stored %d %v (%v)", len(seen), types(seen), len(truth.Events), types(truth.Events), err)
	}
}

// approveWhen answers the pending approval of exec straight at the server once ready says so.
func (g *netRig) approveWhen(t *testing.T, ctx context.Context, exec string, ready func() bool) <-chan error {
	done := make(chan error, 1)
	go func() {
		for !ready() {
			if !sleepCtx(ctx, 10*time.Millisecond) {
				done <- errors.New("the condition to approve never held: " + context.Cause(ctx).Error())
				return
			}
		}
		for {
			list, err := g.direct.ListEvents(ctx, exec, 0, 0)
			if err != nil {
				done <- err
				return
			}
			for _, e := range list.Events {
				if e.Type == api.StandardEventTypeActionRequired {
					_, err := g.direct.RespondToAction(ctx, exec, typed(e.Data.AsActionRequest()).ID, api.ActionResponse{Approved: new(true)})
					done <- err
					return
				}
			}
			if !sleepCtx(ctx, 10*time.Millisecond) {
				done <- ctx.Err()
				return
			}
		}
	}()
	return done
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-time.After(d):
		return true
	case <-ctx.Done():
		return false
	}
}

// A stream whose connection stays open but brings nothing is dead: the client must drop it
// and reconnect on its own, long before the caller's context ends.
func TestDeadStreamIsDroppedAndResumed(t *testing.T) {
	t.Run("Run, silent before the header", func(t *testing.T) {
		g := newNetRig(t)
		g.proxy.add("silent", onStream, 1, silence)
		ctx := bounded(t)
		g.run(t, ctx)
		// The proxy learns that the client left when its server notices the closed connection.
		for g.proxy.abandoned("silent") != 1 {
			if !sleepCtx(ctx, 10*time.Millisecond) {
				t.Fatalf("the client left %d silent streams, want 1", g.proxy.abandoned("silent"))
			}
		}
	})

	// The stream passes run.queued, run.started and action.required, then falls silent:
	// no event, no heartbeat. The execution waits for the approval, which is only given once
	// the client has reconnected, so nothing but dead-stream detection can end the wait.
	t.Run("Events, heartbeats withheld", func(t *testing.T) {
		g := newNetRig(t)
		g.proxy.add("silent", on(routeStream), 1, editFrames(silentAfter(3), true))
		ctx := bounded(t)
		exec, err := g.direct.StartExecution(ctx, g.startReq(api.JSONObject{"requireApproval": true}))
		if err != nil {
			t.Fatal(err)
		}
		approved := g.approveWhen(t, ctx, exec.ID, func() bool {
			return g.proxy.abandoned("silent") == 1 && g.proxy.seen(routeStream) >= 2
		})
		var seen []api.RuntimeEvent
		for e, err := range g.client.Events(ctx, exec.ID, 0) {
			if err != nil {
				t.Fatalf("Events: %v (saw %v)", err, types(seen))
			}
			seen = append(seen, e)
		}
		if err := <-approved; err != nil {
			t.Fatal(err)
		}
		g.exactlyOnce(t, exec.ID, seen)
	})

	t.Run("WaitForTerminal, silent before the header", func(t *testing.T) {
		g := newNetRig(t)
		g.proxy.add("silent", on(routeStream), 1, silence)
		ctx := bounded(t)
		exec, err := g.direct.StartExecution(ctx, g.startReq(api.JSONObject{"requireApproval": true}))
		if err != nil {
			t.Fatal(err)
		}
		approved := g.approveWhen(t, ctx, exec.ID, func() bool { return g.proxy.seen(routeStream) >= 2 })
		final, err := g.client.WaitForTerminal(ctx, exec.ID)
		if err != nil || final.State != api.ExecutionStateSucceeded {
			t.Fatalf("WaitForTerminal = %s, %v", final.State, err)
		}
		if err := <-approved; err != nil {
			t.Fatal(err)
		}
	})
}

// A call whose answer stalls (no header, or half a body and then nothing) is abandoned after
// the stall timeout and tried again.
func TestSilentAnswerIsRetried(t *testing.T) {
	for name, fault := range map[string]netFault{"no header": silence, "half a body": silenceMidBody} {
		t.Run(name, func(t *testing.T) {
			g := newNetRig(t, sdk.WithStallTimeout(3*testHeartbeat))
			exec, err := g.direct.StartExecution(t.Context(), g.startReq(api.JSONObject{}))
			if err != nil {
				t.Fatal(err)
			}
			g.proxy.add("silent", on(routeGet), 1, fault)
			got, err := g.client.GetExecution(bounded(t), exec.ID)
			if err != nil || got.ID != exec.ID {
				t.Fatalf("GetExecution = %+v, %v", got, err)
			}
			if n := g.proxy.seen(routeGet); n != 2 {
				t.Fatalf("the proxy saw %d tries, want 2", n)
			}
		})
	}
}

// Every call retries an answer whose header arrived but whose body was cut short, within the
// retry policy, and without doing twice what must be done once.
func TestCutAnswersAreRetried(t *testing.T) {
	type call func(t *testing.T, g *netRig, ctx context.Context) error
	// finished starts an execution with an artifact and waits until it has ended.
	finished := func(t *testing.T, g *netRig) api.Execution {
		exec, err := g.direct.StartExecution(t.Context(), g.startReq(api.JSONObject{"artifactName": "out.txt"}))
		if err == nil {
			exec, err = g.direct.WaitForTerminal(t.Context(), exec.ID)
		}
		if err != nil {
			t.Fatal(err)
		}
		return exec
	}
	for _, tc := range []struct {
		route string
		call  call
	}{
		{routeStart, func(t *testing.T, g *netRig, ctx context.Context) error {
			created := g.srv.created.n.Load()
			var replayed bool
			exec, err := g.client.StartExecution(ctx, g.startReq(api.JSONObject{}), sdk.Replayed(&replayed))
			if err == nil && (exec.ID == "" || replayed || g.srv.created.n.Load() != created+1) {
				t.Errorf("start: execution %q, replayed %v, %d created; want one, started by this call", exec.ID, replayed, g.srv.created.n.Load()-created)
			}
			return err
		}},
		{routeGet, func(t *testing.T, g *netRig, ctx context.Context) error {
			exec := finished(t, g)
			got, err := g.client.GetExecution(ctx, exec.ID)
			if err == nil && !reflect.DeepEqual(got, exec) {
				t.Errorf("get: %+v, want %+v", got, exec)
			}
			return err
		}},
		{routeCancel, func(t *testing.T, g *netRig, ctx context.Context) error {
			exec, err := g.direct.StartExecution(t.Context(), g.startReq(api.JSONObject{"requireApproval": true}))
			if err != nil {
				t.Fatal(err)
			}
			got, err := g.client.CancelExecution(ctx, exec.ID, api.CancelExecutionRequest{})
			if err == nil && got.State != api.ExecutionStateCancelled {
				t.Errorf("cancel: state %s", got.State)
			}
			return err
		}},
		{routeArtifacts, func(t *testing.T, g *netRig, ctx context.Context) error {
			exec := finished(t, g)
			list, err := g.client.ListArtifacts(ctx, exec.ID)
			if err == nil && (len(list) != 1 || list[0].Name != "out.txt") {
				t.Errorf("artifacts: %+v", list)
			}
			return err
		}},
		{routeEventsJSON, func(t *testing.T, g *netRig, ctx context.Context) error {
			exec := finished(t, g)
			list, err := g.client.ListEvents(ctx, exec.ID, 0, 0)
			if err == nil {
				g.exactlyOnce(t, exec.ID, list.Events)
			}
			return err
		}},
		{routeRespond, func(t *testing.T, g *netRig, ctx context.Context) error {
			// The answer is applied and its body cut; the retry meets ACTION_ALREADY_RESOLVED
			// and reads the execution, whose first answer is cut too.
			g.proxy.add("cut read after 409", on(routeGet), 1, cutBody)
			exec, err := g.direct.StartExecution(t.Context(), g.startReq(api.JSONObject{"requireApproval": true}))
			if err != nil {
				t.Fatal(err)
			}
			action := untilAction(t, g.direct, exec.ID)
			got, err := g.client.RespondToAction(ctx, exec.ID, action.ID, api.ActionResponse{Approved: new(true)})
			if err == nil && (got.ID != exec.ID || g.proxy.hits("cut read after 409") != 1) {
				t.Errorf("respond: %+v, the read after 409 cut %d times", got, g.proxy.hits("cut read after 409"))
			}
			return err
		}},
		{routeCreateConv, func(t *testing.T, g *netRig, ctx context.Context) error {
			conv, err := g.client.CreateConversation(ctx, api.CreateConversationRequest{Metadata: &api.JSONObject{"k": "v"}})
			if err == nil {
				if read, err := g.direct.GetConversation(ctx, conv.ID); err != nil || read.Metadata["k"] != "v" {
					t.Errorf("create: the conversation returned reads %+v, %v", read, err)
				}
			}
			return err
		}},
		{routeGetConv, func(t *testing.T, g *netRig, ctx context.Context) error {
			conv, err := g.client.GetConversation(ctx, g.conv)
			if err == nil && conv.ID != g.conv {
				t.Errorf("get conversation: %+v", conv)
			}
			return err
		}},
		{routeRuntime, func(t *testing.T, g *netRig, ctx context.Context) error {
			desc, err := g.client.DescribeRuntime(ctx)
			if err == nil && len(desc.Providers) != 1 {
				t.Errorf("runtime: %+v", desc)
			}
			return err
		}},
		{routeCapabilities, func(t *testing.T, g *netRig, ctx context.Context) error {
			caps, err := g.client.ListCapabilities(ctx)
			if err == nil && len(caps) != 1 {
				t.Errorf("capabilities: %+v", caps)
			}
			return err
		}},
		{routeHealth, func(t *testing.T, g *netRig, ctx context.Context) error {
			return g.client.Health(ctx)
		}},
	} {
		t.Run(tc.route, func(t *testing.T) {
			g := newNetRig(t)
			g.proxy.add("cut", on(tc.route), 1, cutBody)
			if err := tc.call(t, g, bounded(t)); err != nil {
				t.Fatalf("%s with its first answer cut: %v", tc.route, err)
			}
			if g.proxy.hits("cut") != 1 {
				t.Fatalf("the proxy cut %d answers, want 1", g.proxy.hits("cut"))
			}
		})
	}
}

// An event lost right before the stream goes quiet is found in the replay. Here every stream
// loses action.required, and the heartbeats keep the connection alive: the execution waits
// for an answer to a question the caller never saw, unless the quiet stream makes the client
// look.
func TestEventLostBeforeAQuietStreamIsRecovered(t *testing.T) {
	g := newNetRig(t)
	g.proxy.add("lose action.required", onStream, -1, editFrames(dropEvents("action.required"), false))
	g.run(t, bounded(t))
	if g.proxy.hits("lose action.required") == 0 {
		t.Fatal("no stream went through the proxy")
	}
}

// Events sent twice, and an older one sent again, inside one stream reach the caller once.
func TestDuplicatesInsideOneStreamAreDropped(t *testing.T) {
	g := newNetRig(t)
	g.proxy.add("repeat", onStream, -1, editFrames(repeatEvents(), false))
	g.run(t, bounded(t))
}

// 502 and 504 from a gateway are retried by every call that may be repeated; creating a
// conversation is not, since the server may have created it (see CreateConversation).
func TestGatewayErrorsAreRetried(t *testing.T) {
	g := newNetRig(t)
	perRoute := map[string]int{}
	// The first two requests of every route but the conversation's creation fail: 502, then 504.
	firstTwo := func(r *http.Request) bool {
		route := routeOf(r)
		perRoute[route]++ // under the proxy's lock
		return route != routeCreateConv && perRoute[route] <= 2
	}
	flaky := func(p *netProxy, rule string, w http.ResponseWriter, r *http.Request) {
		status := http.StatusBadGateway
		if p.seen(routeOf(r))%2 == 0 {
			status = http.StatusGatewayTimeout
		}
		gateway(status)(p, rule, w, r)
	}
	g.proxy.add("502/504", firstTwo, -1, flaky)
	ctx := bounded(t)
	res := g.run(t, ctx)
	// Run took the final snapshot from the start's trailer: read it as a client would.
	if _, err := g.client.GetExecution(ctx, res.Execution.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := g.client.ListArtifacts(ctx, res.Execution.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := g.client.GetConversation(ctx, g.conv); err != nil {
		t.Fatal(err)
	}
	if n := g.proxy.hits("502/504"); n < 2*5 { // start, stream, respond, get, artifacts, conversation
		t.Fatalf("only %d gateway errors were injected", n)
	}
	g.proxy.add("create 502", on(routeCreateConv), 1, gateway(http.StatusBadGateway))
	var apiErr *sdk.Error
	if _, err := g.client.CreateConversation(ctx, api.CreateConversationRequest{}); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadGateway {
		t.Fatalf("CreateConversation after a 502 = %v; want the 502, not a retry", err)
	}
}

// An answer that comes slowly but steadily is never taken for a dead one: the header after a
// pause, the body in pieces, each pause well under the stall timeout though all of them
// together exceed it.
func TestSlowAnswersAreNotCut(t *testing.T) {
	const pause = 100 * time.Millisecond
	g := newNetRig(t, sdk.WithStallTimeout(10*pause))
	exec, err := g.direct.StartExecution(t.Context(), g.startReq(api.JSONObject{}))
	if err != nil {
		t.Fatal(err)
	}
	g.proxy.add("slow", on(routeGet), 1, slow(pause, 15))
	got, err := g.client.GetExecution(bounded(t), exec.ID)
	if err != nil || got.ID != exec.ID {
		t.Fatalf("GetExecution = %+v, %v", got, err)
	}
	if n := g.proxy.seen(routeGet); n != 1 {
		t.Fatalf("the proxy saw %d tries of a slow answer, want 1", n)
	}
}

// WithReconnectTimeout ends Events with ErrNoProgress when the client can only reconnect.
func TestEventsGivesUpWithoutProgress(t *testing.T) {
	g := newNetRig(t, sdk.WithReconnectTimeout(5*testHeartbeat))
	exec, err := g.direct.StartExecution(t.Context(), g.startReq(api.JSONObject{"requireApproval": true}))
	if err != nil {
		t.Fatal(err)
	}
	g.proxy.add("silent", on(routeStream), -1, silence)
	var last error
	for _, err := range g.client.Events(bounded(t), exec.ID, 0) {
		last = err
	}
	if !errors.Is(last, sdk.ErrNoProgress) {
		t.Fatalf("Events ended with %v, want ErrNoProgress", last)
	}
	if n := g.proxy.hits("silent"); n < 2 {
		t.Fatalf("the client tried %d streams before giving up, want it to reconnect first", n)
	}
}

// A stream that only brings heartbeats, and a caller who holds an event for long, are not a
// lack of progress.
func TestQuietStreamIsProgress(t *testing.T) {
	g := newNetRig(t, sdk.WithReconnectTimeout(3*testHeartbeat))
	ctx := bounded(t)
	exec, err := g.direct.StartExecution(ctx, g.startReq(api.JSONObject{"requireApproval": true}))
	if err != nil {
		t.Fatal(err)
	}
	var seen []api.RuntimeEvent
	var approved <-chan error
	for e, err := range g.client.Events(ctx, exec.ID, 0) {
		if err != nil {
			t.Fatalf("Events: %v (saw %v)", err, types(seen))
		}
		seen = append(seen, e)
		if e.Type == api.StandardEventTypeActionRequired {
			time.Sleep(5 * testHeartbeat) // the caller thinks it over
			// and the stream waits, with heartbeats only, until the approval comes.
			wait := time.Now().Add(5 * testHeartbeat)
			approved = g.approveWhen(t, ctx, exec.ID, func() bool { return time.Now().After(wait) })
		}
	}
	if approved == nil {
		t.Fatal("no action.required")
	}
	if err := <-approved; err != nil {
		t.Fatal(err)
	}
	g.exactlyOnce(t, exec.ID, seen)
	// Nor is either a dead stream: the dead-stream clock runs only while the client waits for
	// bytes, and heartbeats reset it.
	if n := g.proxy.seen(routeStream); n != 1 {
		t.Fatalf("the client opened %d streams, want 1: a held event or a heartbeat-only wait was taken for a dead stream", n)
	}
}

// Idempotent-Replayed reaches the caller of StartExecution and Run.
func TestStartReportsReplayed(t *testing.T) {
	g := newNetRig(t)
	ctx := bounded(t)
	req := g.startReq(api.JSONObject{})
	req.IdempotencyKey = new("job-42")
	var first, second bool
	a, err := g.client.StartExecution(ctx, req, sdk.Replayed(&first))
	if err != nil {
		t.Fatal(err)
	}
	b, err := g.client.StartExecution(ctx, req, sdk.Replayed(&second))
	if err != nil || a.ID != b.ID || first || !second {
		t.Fatalf("starts with one key: %s (replayed %v), %s (replayed %v), %v", a.ID, first, b.ID, second, err)
	}
	res, err := g.client.Run(ctx, req, sdk.RunHandlers{})
	if err != nil || res.Execution.ID != a.ID || !res.Replayed {
		t.Fatalf("Run with the same key = %s, replayed %v, %v", res.Execution.ID, res.Replayed, err)
	}
}
