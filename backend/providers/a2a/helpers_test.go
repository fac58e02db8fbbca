package a2a_test

import (
	"context"
	"io"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/a2a"
	"github.com/harness-edge/harness-edge/proxy"
	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// edge is the backend runtime on a bbolt file, served by the proxy over loopback, with one A2A
// provider "agent".
type edge struct {
	rt     *backend.Runtime
	agent  *a2a.Agent
	url    string
	client *sdk.Client
}

func startEdge(t testing.TB, dir string, cfg a2a.Config) *edge {
	t.Helper()
	return startEdgeWith(t, dir, cfg, backend.Options{})
}

// startEdgeWith is startEdge with runtime options (a tracer provider, say); the provider and
// the cancel timeout are set here.
func startEdgeWith(t testing.TB, dir string, cfg a2a.Config, opts backend.Options) *edge {
	t.Helper()
	if cfg.ID == "" {
		cfg.ID = "agent"
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 100 * time.Millisecond
	}
	agent, err := a2a.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	opts.Providers, opts.CancelTimeout = []backend.Provider{agent.Provider()}, 5*time.Second
	rt, err := local.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	agent.Watch(func() {
		if err := rt.SetProviders([]backend.Provider{agent.Provider()}); err != nil {
			t.Errorf("register the provider again: %v", err)
		}
	})
	h := proxy.New(rt, proxy.Options{RetryHint: time.Millisecond})
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		agent.Close()
		h.Shutdown()
		srv.Close()
		_ = rt.Close()
	})
	client, err := sdk.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return &edge{rt: rt, agent: agent, url: srv.URL, client: client}
}

// newConversation creates a conversation at the edge.
// startSlowTask starts an execution the agent answers slowly ("slow 200 50") and follows it to
// its first text: it returns the execution and the agent's task id, which a provider.event names.
func (e *edge) startSlowTask(t testing.TB, ctx context.Context) (api.Execution, string) {
	t.Helper()
	exec, err := e.client.StartExecution(ctx, api.StartExecutionRequest{ConversationID: e.newConversation(t), ProviderID: "agent", Input: "slow 200 50"})
	if err != nil {
		t.Fatal(err)
	}
	var taskID string
	for ev, err := range e.client.Events(ctx, exec.ID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == api.StandardEventTypeProviderEvent {
			data, _ := ev.Data.AsProviderEventData()
			taskID, _ = data["taskId"].(string)
		}
		if ev.Type == api.StandardEventTypeOutputTextDelta {
			break
		}
	}
	return exec, taskID
}

func (e *edge) newConversation(t testing.TB) string {
	t.Helper()
	conv, err := e.client.CreateConversation(context.Background(), api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return conv.ID
}

// run runs input through the SDK's one-call path in a new conversation, answering actions
// with onAction, and returns the result and the text the stream delivered.
func (e *edge) run(t testing.TB, input string, onAction func(api.ActionRequest) (api.ActionResponse, error)) (sdk.RunResult, []string) {
	t.Helper()
	return e.runIn(t, e.newConversation(t), input, onAction)
}

func (e *edge) runIn(t testing.TB, conversation, input string, onAction func(api.ActionRequest) (api.ActionResponse, error)) (sdk.RunResult, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var deltas []string
	handlers := sdk.RunHandlers{OnText: func(s string) { deltas = append(deltas, s) }}
	if onAction != nil {
		handlers.OnAction = func(_ context.Context, req api.ActionRequest) (api.ActionResponse, error) { return onAction(req) }
	}
	res, err := e.client.Run(ctx, api.StartExecutionRequest{ConversationID: conversation, ProviderID: "agent", Input: input}, handlers)
	if err != nil {
		t.Fatalf("run %q: %v", input, err)
	}
	return res, deltas
}

// events reads an execution's whole stored log once it is terminal.
func (e *edge) events(t *testing.T, id string) []api.RuntimeEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := e.client.WaitForTerminal(ctx, id); err != nil {
		t.Fatalf("wait for %s: %v", id, err)
	}
	page, err := e.client.ListEvents(ctx, id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return page.Events
}

func types(events []api.RuntimeEvent) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = string(e.Type)
	}
	return out
}

func deltaTexts(events []api.RuntimeEvent) []string {
	var out []string
	for _, e := range events {
		if e.Type == api.StandardEventTypeOutputTextDelta {
			d, _ := e.Data.AsTextDeltaData()
			out = append(out, d.Text)
		}
	}
	return out
}

// taskEvent is the provider.event naming the execution's A2A task.
func taskEvent(t *testing.T, events []api.RuntimeEvent) map[string]any {
	t.Helper()
	for _, e := range events {
		if e.Type == api.StandardEventTypeProviderEvent {
			data, _ := e.Data.AsProviderEventData()
			if data["type"] == "a2a.task" {
				return data
			}
		}
	}
	t.Fatalf("no a2a.task event in %v", types(events))
	return nil
}

// cutProxy is a TCP proxy between the edge and the agent that can drop every connection and
// refuse new ones for a while: an agent stream cut mid-task, and the agent out of reach.
type cutProxy struct {
	l      net.Listener
	target string

	mu      sync.Mutex
	conns   []net.Conn
	refuse  bool
	cuts    int
	accepts int
}

func startCutProxy(t *testing.T) *cutProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{l: l}
	t.Cleanup(func() {
		_ = l.Close()
		p.cut()
	})
	go p.serve()
	return p
}

func (p *cutProxy) url() string { return "http://" + p.l.Addr().String() }

func (p *cutProxy) setTarget(base string) {
	p.mu.Lock()
	p.target = strings.TrimPrefix(base, "http://")
	p.mu.Unlock()
}

func (p *cutProxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse, target := p.refuse, p.target
		p.accepts++
		p.mu.Unlock()
		if refuse {
			_ = c.Close()
			continue
		}
		up, err := net.Dial("tcp", target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
		go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
	}
}

// cut closes every open connection (both sides).
func (p *cutProxy) cut() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.cuts++
	p.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// setRefusing makes new connections be closed at once (on) or proxied again (off).
func (p *cutProxy) setRefusing(on bool) {
	p.mu.Lock()
	p.refuse = on
	p.mu.Unlock()
}
