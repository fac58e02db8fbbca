package acp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// fixtureAgent is the scripted Go agent (testdata/fixture-agent), built once per test run.
var fixtureAgent string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "acp-fixture-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	fixtureAgent = filepath.Join(dir, "fixture-agent")
	build := exec.Command("go", "build", "-o", fixtureAgent, "./testdata/fixture-agent")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the fixture agent: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// testGrace is the shutdown grace of most tests: long enough that a loaded CI machine still
// confirms a SIGKILLed child within it, so "closure not confirmed" can only mean a real bug.
const testGrace = 2 * time.Second

// harness is one runtime (real bbolt file in t.TempDir) with one ACP provider registered, and the
// record of every agent process that provider spawned.
type harness struct {
	t        *testing.T
	rt       *backend.Runtime
	provider *Provider
	agentLog string // the fixture agent's record of what it saw

	closeOnce sync.Once

	mu       sync.Mutex
	pids     map[string]int
	failures map[string]error
	exits    map[string]string
}

// newHarness registers a provider running the fixture agent with the given scenario; adjust
// changes the Config before construction.
func newHarness(t *testing.T, scenario string, adjust func(*Config)) *harness {
	t.Helper()
	agentLog := filepath.Join(t.TempDir(), "agent.log")
	cfg := Config{
		Command:       fixtureAgent,
		Env:           map[string]string{"ACP_FIXTURE_SCENARIO": scenario, "ACP_FIXTURE_LOG": agentLog},
		ShutdownGrace: Duration(testGrace),
	}
	if adjust != nil {
		adjust(&cfg)
	}
	return newHarnessWith(t, cfg, agentLog)
}

func newHarnessWith(t *testing.T, cfg Config, agentLog string) *harness {
	t.Helper()
	return prepareHarness(t, cfg, agentLog).open(backend.Options{})
}

// newStartedHarness is newHarnessWith with the provider started (its capability probe answered)
// before it is registered, as the Caddy module does: the manifest tells the agent's continuity.
func newStartedHarness(t *testing.T, cfg Config, agentLog string, opts backend.Options) *harness {
	t.Helper()
	h := prepareHarness(t, cfg, agentLog)
	if err := h.provider.Start(context.Background(), nil); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return h.open(opts)
}

// prepareHarness builds the provider with an observer that records what the harness checks.
func prepareHarness(t *testing.T, cfg Config, agentLog string) *harness {
	t.Helper()
	built, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h := &harness{t: t, provider: built, agentLog: agentLog, pids: map[string]int{}, failures: map[string]error{}, exits: map[string]string{}}
	h.provider.observe = observer{
		onSpawn: func(id string, pid int) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.pids[id] = pid
		},
		onFailure: func(id string, cause error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.failures[id] = cause
		},
		onExit: func(id string, status string) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.exits[id] = status
		},
	}
	return h
}

// open registers the provider with a runtime on a bbolt file in a temporary directory; the
// runtime and the provider close, and every agent is checked reaped, when the test ends.
func (h *harness) open(opts backend.Options) *harness {
	t := h.t
	t.Helper()
	opts.Providers = []backend.Provider{h.provider}
	var err error
	h.rt, err = local.Open(t.TempDir(), opts)
	if err != nil {
		t.Fatalf("backend.Open: %v", err)
	}
	t.Cleanup(h.close)
	return h
}

// close closes the runtime, then the provider (which ends the warm processes), and checks that
// every agent was reaped. The test's cleanup calls it; a test may call it earlier.
func (h *harness) close() {
	h.closeOnce.Do(func() {
		_ = h.rt.Close()
		h.provider.Close()
		h.assertAllReaped()
	})
}

// start begins an execution on the provider and returns its id.
func (h *harness) start(input string, config api.JSONObject) string {
	h.t.Helper()
	ctx := context.Background()
	conv, err := h.rt.CreateConversation(ctx, nil)
	if err != nil {
		h.t.Fatalf("CreateConversation: %v", err)
	}
	req := api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: h.provider.Manifest().ID, Input: input}
	if config != nil {
		req.Config = config
	}
	exec, _, err := h.rt.StartExecution(ctx, req)
	if err != nil {
		h.t.Fatalf("StartExecution: %v", err)
	}
	return exec.ID
}

// follow collects the execution's events until the terminal one. onEvent (optional) sees each
// event as it arrives — tests answer actions or cancel from there.
func (h *harness) follow(id string, onEvent func(api.RuntimeEvent)) []api.RuntimeEvent {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var events []api.RuntimeEvent
	for stored, err := range backend.FollowExecution(ctx, h.rt, id, 0) {
		if err != nil {
			h.t.Fatalf("Follow: %v (events so far: %s)", err, describe(events))
		}
		event, err := stored.Decode()
		if err != nil {
			h.t.Fatalf("Decode: %v", err)
		}
		events = append(events, event)
		if onEvent != nil {
			onEvent(event)
		}
	}
	return events
}

// run starts an execution and follows it to its end.
func (h *harness) run(input string, onEvent func(api.RuntimeEvent)) (api.Execution, []api.RuntimeEvent) {
	h.t.Helper()
	id := h.start(input, nil)
	events := h.follow(id, onEvent)
	return h.execution(id), events
}

func (h *harness) execution(id string) api.Execution {
	h.t.Helper()
	exec, err := h.rt.GetExecution(context.Background(), id)
	if err != nil {
		h.t.Fatalf("GetExecution: %v", err)
	}
	return exec
}

func (h *harness) respond(executionID, actionID string, response api.ActionResponse) {
	h.t.Helper()
	_, err := h.rt.RespondToAction(context.Background(), executionID, actionID,
		func() (api.ActionResponse, error) { return response, nil })
	if err != nil {
		h.t.Fatalf("RespondToAction: %v", err)
	}
}

// cancelAsync cancels from a goroutine (CancelExecution waits for cleanup, and the caller is
// usually inside follow's loop) and returns the channel delivering the result.
func (h *harness) cancelAsync(id, reason string) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := h.rt.CancelExecution(context.Background(), id, &reason)
		done <- err
	}()
	return done
}

func (h *harness) failure(id string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failures[id]
}

// exitStatus is the reaped agent's wait status ("exit status 0", "signal: killed").
func (h *harness) exitStatus(id string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.exits[id]
}

func (h *harness) pid(id string) (int, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	pid, ok := h.pids[id]
	return pid, ok
}

// assertReaped checks that the execution's agent no longer exists: not running, not a zombie
// (a zombie still answers signal 0, so ESRCH means it was waited for).
func (h *harness) assertReaped(id string) {
	h.t.Helper()
	pid, ok := h.pid(id)
	if !ok {
		h.t.Fatalf("no agent process was spawned for %s", id)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		h.t.Fatalf("agent pid %d of %s was not reaped (kill 0: %v)", pid, id, err)
	}
}

// assertWarm checks that the agent the execution spawned is alive and waits in the pool for its
// conversation's next turn.
func (h *harness) assertWarm(id string) {
	h.t.Helper()
	pid, ok := h.pid(id)
	if !ok {
		h.t.Fatalf("no agent process was spawned for %s", id)
	}
	if processDead(pid) {
		h.t.Fatalf("agent pid %d of %s is gone, want it kept warm", pid, id)
	}
	if !h.provider.pool.holds(pid) {
		h.t.Fatalf("agent pid %d of %s is not waiting in the pool", pid, id)
	}
}

func (h *harness) assertAllReaped() {
	h.mu.Lock()
	ids := make([]string, 0, len(h.pids))
	for id := range h.pids {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	for _, id := range ids {
		h.assertReaped(id)
	}
}

// agentSaw returns the fixture agent's record, one fact per line.
func (h *harness) agentSaw() []string {
	h.t.Helper()
	data, err := os.ReadFile(h.agentLog)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		h.t.Fatalf("reading the agent log: %v", err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// wireLines are the raw lines the agent received, in wire order.
func (h *harness) wireLines() []string {
	var lines []string
	for _, line := range h.agentSaw() {
		if raw, ok := strings.CutPrefix(line, "wire "); ok {
			lines = append(lines, raw)
		}
	}
	return lines
}

func describe(events []api.RuntimeEvent) string {
	var b strings.Builder
	for _, e := range events {
		data, _ := e.Data.MarshalJSON() // the object as sent, not its bytes in decimal
		fmt.Fprintf(&b, "\n  %d %s %s", e.Sequence, e.Type, data)
	}
	return b.String()
}

func ofType(events []api.RuntimeEvent, typ api.StandardEventType) []api.RuntimeEvent {
	var out []api.RuntimeEvent
	for _, e := range events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// requireTerminal checks the execution ended in state with exactly one terminal event, last.
func requireTerminal(t *testing.T, exec api.Execution, events []api.RuntimeEvent, state api.ExecutionState) api.RuntimeEvent {
	t.Helper()
	if exec.State != state {
		t.Fatalf("state = %s, want %s; events:%s", exec.State, state, describe(events))
	}
	terminal := 0
	for _, e := range events {
		switch e.Type {
		case api.StandardEventTypeRunCompleted, api.StandardEventTypeRunFailed, api.StandardEventTypeRunCancelled:
			terminal++
		}
	}
	if terminal != 1 {
		t.Fatalf("%d terminal events, want 1:%s", terminal, describe(events))
	}
	return events[len(events)-1]
}

// requireGenericFailure checks the portable failure says only "ACP agent request failed" and
// that nothing the agent wrote to stderr leaked into any event.
func requireGenericFailure(t *testing.T, exec api.Execution, events []api.RuntimeEvent) {
	t.Helper()
	last := requireTerminal(t, exec, events, api.ExecutionStateFailed)
	if last.Type != api.StandardEventTypeRunFailed || typed(last.Data.AsRunFailedData()).Message != "ACP agent request failed" {
		t.Fatalf("terminal event = %s %v, want run.failed with the generic message", last.Type, last.Data)
	}
	if exec.Error == nil || exec.Error.Message != "ACP agent request failed" {
		t.Fatalf("execution error = %+v, want the generic message", exec.Error)
	}
	requireNoLeak(t, events)
}

func requireNoLeak(t *testing.T, events []api.RuntimeEvent) {
	t.Helper()
	for _, e := range events {
		if strings.Contains(fmt.Sprint(e.Data), "FIXTURE-SECRET") || strings.Contains(fmt.Sprint(e.Data), "hunter2") {
			t.Fatalf("agent diagnostics leaked into %s: %v", e.Type, e.Data)
		}
	}
}

func deltas(events []api.RuntimeEvent) []string {
	var texts []string
	for _, e := range ofType(events, api.StandardEventTypeOutputTextDelta) {
		texts = append(texts, typed(e.Data.AsTextDeltaData()).Text)
	}
	return texts
}

// holds reports whether the process with pid waits warm in the pool.
func (p *pool) holds(pid int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.warm {
		if w.s.pid() == pid {
			return true
		}
	}
	return false
}

// warmCount is how many processes wait warm.
func (p *pool) warmCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.warm)
}
