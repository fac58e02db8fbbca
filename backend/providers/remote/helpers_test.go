package remote_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/backend/providers/remote"
	"github.com/harness-edge/harness-edge/proxy"
	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// fastRetry keeps reconnects and retries quick in tests.
var fastRetry = sdk.RetryPolicy{MaxAttempts: 4, MinWait: 20 * time.Millisecond, MaxWait: 200 * time.Millisecond, MaxRetryAfter: 200 * time.Millisecond}

// upstreamServer is a real upstream: our runtime on a bbolt file, served by the proxy over
// loopback, with the mock provider wrapped so the test sees every upstream execution it runs.
type upstreamServer struct {
	rt  *backend.Runtime
	url string
	srv *httptest.Server

	mu     sync.Mutex
	runs   map[string]string // upstream execution id → its input
	header http.Header       // of the last request
}

// lastHeader returns the last request's header value name.
func (u *upstreamServer) lastHeader(name string) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.header.Get(name)
}

func startUpstream(t *testing.T) *upstreamServer {
	t.Helper()
	return startUpstreamServer(t, false)
}

// startUpstreamServer is startUpstream, over HTTPS with httptest's own certificate when tls is
// set.
func startUpstreamServer(t *testing.T, tls bool) *upstreamServer {
	t.Helper()
	u := &upstreamServer{runs: make(map[string]string)}
	rt, err := local.Open(t.TempDir(), backend.Options{Providers: []backend.Provider{countingMock{u}}, CancelTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	h := proxy.New(rt, proxy.Options{RetryHint: time.Millisecond, Heartbeat: 100 * time.Millisecond})
	recordHeader := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.header = r.Header.Clone()
		u.mu.Unlock()
		h.ServeHTTP(w, r)
	})
	u.rt, u.srv = rt, httptest.NewUnstartedServer(recordHeader)
	if tls {
		u.srv.StartTLS()
	} else {
		u.srv.Start()
	}
	u.url = u.srv.URL
	t.Cleanup(func() {
		h.Shutdown()
		u.srv.Close()
		_ = rt.Close()
	})
	return u
}

// executions returns the upstream executions run so far.
func (u *upstreamServer) executions() map[string]string {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make(map[string]string, len(u.runs))
	for k, v := range u.runs {
		out[k] = v
	}
	return out
}

// executionFor returns the one upstream execution that ran input.
func (u *upstreamServer) executionFor(t *testing.T, input string) string {
	t.Helper()
	var ids []string
	for id, in := range u.executions() {
		if in == input {
			ids = append(ids, id)
		}
	}
	if len(ids) != 1 {
		t.Fatalf("upstream ran %d executions for input %q, want exactly 1: %v", len(ids), input, ids)
	}
	return ids[0]
}

type countingMock struct{ u *upstreamServer }

func (countingMock) Manifest() api.ProviderManifest { return mock.New().Manifest() }

func (c countingMock) Run(ctx context.Context, run *backend.Run) (backend.Result, error) {
	c.u.mu.Lock()
	c.u.runs[run.ExecutionID()] = run.Input()
	c.u.mu.Unlock()
	return mock.New().Run(ctx, run)
}

// edge is a harness-edge runtime whose providers are a remote upstream's.
type edge struct {
	rt     *backend.Runtime
	up     *remote.Upstream
	url    string
	client *sdk.Client
}

func startEdge(t *testing.T, dir string, cfg remote.Config) *edge {
	t.Helper()
	if cfg.Retry == (sdk.RetryPolicy{}) {
		cfg.Retry = fastRetry
	}
	up, err := remote.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := up.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	rt, err := local.Open(dir, backend.Options{Providers: up.Providers(), CancelTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	up.Watch(func() {
		if err := rt.SetProviders(up.Providers()); err != nil {
			t.Errorf("register the upstream's providers: %v", err)
		}
	})
	h := proxy.New(rt, proxy.Options{RetryHint: time.Millisecond})
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		up.Close()
		h.Shutdown()
		srv.Close()
		_ = rt.Close()
	})
	client, err := sdk.New(srv.URL, sdk.WithRetry(fastRetry))
	if err != nil {
		t.Fatal(err)
	}
	return &edge{rt: rt, up: up, url: srv.URL, client: client}
}

// start starts an execution of provider "mock" at the edge in a new conversation.
func (e *edge) start(t *testing.T, input string, config api.JSONObject) api.Execution {
	t.Helper()
	ctx := context.Background()
	conv, err := e.client.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	req := api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: input}
	if config != nil {
		req.Config = config
	}
	exec, err := e.client.StartExecution(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return exec
}

// allEvents reads an execution's whole log from a runtime once it is terminal.
func allEvents(t *testing.T, c *sdk.Client, id string) []api.RuntimeEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.WaitForTerminal(ctx, id); err != nil {
		t.Fatalf("wait for %s: %v", id, err)
	}
	page, err := c.ListEvents(ctx, id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return page.Events
}

// relayable keeps the events a provider emits (the ones the edge relays), as type + data.
func relayable(events []api.RuntimeEvent) []api.RuntimeEvent {
	return slices.DeleteFunc(slices.Clone(events), func(e api.RuntimeEvent) bool {
		switch e.Type {
		case api.StandardEventTypeOutputTextDelta, api.StandardEventTypeProviderEvent,
			api.StandardEventTypeArtifactCreated, api.StandardEventTypeActionRequired,
			api.StandardEventTypeActionResponded:
			return false
		}
		return true
	})
}

func types(events []api.RuntimeEvent) []api.StandardEventType {
	out := make([]api.StandardEventType, len(events))
	for i, e := range events {
		out[i] = e.Type
	}
	return out
}

func upstreamClient(t *testing.T, u *upstreamServer) *sdk.Client {
	t.Helper()
	c, err := sdk.New(u.url, sdk.WithRetry(fastRetry))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sameRelay checks that the edge relayed the upstream's events exactly once, in order: the
// provider-emitted events match one for one (text and action kinds compared), and the final
// output is the upstream's.
func sameRelay(t *testing.T, local, upstream []api.RuntimeEvent) {
	t.Helper()
	l, u := relayable(local), relayable(upstream)
	if !slices.Equal(types(l), types(u)) {
		t.Fatalf("relayed events %v, upstream had %v", types(l), types(u))
	}
	for i := range l {
		switch l[i].Type {
		case api.StandardEventTypeOutputTextDelta:
			if typed(l[i].Data.AsTextDeltaData()).Text != typed(u[i].Data.AsTextDeltaData()).Text {
				t.Errorf("delta %d: %q, upstream %q", i, typed(l[i].Data.AsTextDeltaData()).Text, typed(u[i].Data.AsTextDeltaData()).Text)
			}
		case api.StandardEventTypeActionRequired:
			if typed(l[i].Data.AsActionRequest()).Kind != typed(u[i].Data.AsActionRequest()).Kind || typed(l[i].Data.AsActionRequest()).Title != typed(u[i].Data.AsActionRequest()).Title {
				t.Errorf("action %d: %v, upstream %v", i, l[i].Data, u[i].Data)
			}
		case api.StandardEventTypeArtifactCreated:
			if typed(l[i].Data.AsActionRequest()).ID != typed(u[i].Data.AsActionRequest()).ID || typed(l[i].Data.AsArtifact()).Name != typed(u[i].Data.AsArtifact()).Name {
				t.Errorf("artifact %d: %v, upstream %v", i, l[i].Data, u[i].Data)
			}
		}
	}
	lt, ut := local[len(local)-1], upstream[len(upstream)-1]
	if lt.Type != ut.Type {
		t.Fatalf("terminal event %s, upstream %s", lt.Type, ut.Type)
	}
	if lt.Type == api.StandardEventTypeRunCompleted && typed(lt.Data.AsRunCompletedData()).FinalOutput != typed(ut.Data.AsRunCompletedData()).FinalOutput {
		t.Errorf("final output %q, upstream %q", typed(lt.Data.AsRunCompletedData()).FinalOutput, typed(ut.Data.AsRunCompletedData()).FinalOutput)
	}
}

var _ http.Handler = (*faultProxy)(nil)
