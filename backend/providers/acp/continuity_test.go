package acp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/internal/acptest"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// continuityCase is one agent of the continuity suite: an SDK line and what the agent offers to
// continue a session in a new process (the ts-agent's --continuity flag).
type continuityCase struct {
	sdk  acptest.SDK
	mode string // none, load, resume, both
}

// via is how a fresh process continues the stored session: resume when offered, else load, and
// with neither a new session that remembers nothing.
func (c continuityCase) via() string {
	switch c.mode {
	case "resume", "both":
		return viaResume
	case "load":
		return viaLoad
	}
	return viaNew
}

// remembers is what the agent recalls in a fresh process of what came before: everything when
// it can continue the stored session, nothing otherwise.
func (c continuityCase) remembers(before []string) []string {
	if c.via() == viaNew {
		return nil
	}
	return before
}

// newAgentHarness runs the remembering TypeScript agent (internal/acptest) in mode on sdk, its
// sessions kept in sessions, each conversation in a directory of its own under root.
func newAgentHarness(t *testing.T, agent acptest.Agent, c continuityCase, sessions string, adjust func(*Config)) *harness {
	t.Helper()
	agentLog := filepath.Join(t.TempDir(), "agent.log")
	env := agent.Env(c.sdk)
	env["ACP_TS_AGENT_LOG"] = agentLog
	cfg := Config{
		ID:               "remembering",
		Command:          agent.Node,
		Args:             []string{agent.Script, "--continuity", c.mode, "--sessions", sessions},
		Env:              env,
		ConversationRoot: filepath.Join(t.TempDir(), "conversations"),
		ShutdownGrace:    Duration(testGrace),
	}
	if adjust != nil {
		adjust(&cfg)
	}
	return newStartedHarness(t, cfg, agentLog, backend.Options{})
}

// A conversation's executions are turns of one native session on every pinned SDK line and for
// every combination of capabilities: the second turn recalls the first on the warm process;
// after the process is evicted a fresh one continues the stored session as the agent offered
// in initialize (history replayed by session/load is not this execution's output); an agent
// that dies in the middle of a turn fails that execution only, and the next turn continues in
// a fresh process. An agent with neither capability is reported as degraded and remembers only
// while its process stays warm. The conversation works in a directory of its own (another
// conversation in another: TestPoolBoundsAndLeaks).
func TestConversationContinuity(t *testing.T) {
	agent := acptest.Prepare(t)
	var cases []continuityCase
	for _, sdk := range agent.SDKs {
		for _, mode := range []string{"none", "load", "resume", "both"} {
			cases = append(cases, continuityCase{sdk, mode})
		}
	}
	for _, c := range cases {
		t.Run(c.sdk.Version+"/"+c.mode, func(t *testing.T) {
			t.Parallel() // the agents are separate processes; most of a row is waiting for node
			h := newAgentHarness(t, agent, c, t.TempDir(), nil)

			// The manifest says what the agent answered to the probe's initialize.
			level, how := h.provider.Manifest().Capabilities["conversation.continuity"], (*h.provider.Manifest().Metadata)["sessionContinuity"]
			wantLevel, wantHow := api.SupportLevelNative, map[string]string{
				"load": "session/load", "resume": "session/resume", "both": "session/resume, session/load"}[c.mode]
			if c.mode == "none" {
				wantLevel, wantHow = api.SupportLevelDegraded, "warm process only"
			}
			if level != wantLevel || how != wantHow {
				t.Fatalf("continuity = %s (%v), want %s (%s)", level, how, wantLevel, wantHow)
			}

			conv := h.conversation()
			// The preflight passes native and degraded alike (docs/protocol.md §10.1).
			first, events := h.turn(conv, "apple", "conversation.continuity")
			h.requireRecall(first, events, nil, "apple")
			attached := attachedOf(t, events)
			if attached["via"] != viaNew {
				t.Fatalf("first turn attached %v, want a new session", attached)
			}
			session := attached["sessionId"]
			dir := filepath.Join(h.provider.settings.conversationRoot, conv)
			if info, err := os.Stat(dir); err != nil || !info.IsDir() || info.Mode().Perm() != 0o700 {
				t.Fatalf("the conversation's directory %s: %v, %v; want a 0700 directory", dir, info, err)
			}
			if saw := tsAgentSaw(t, h.agentLog); !slices.Contains(saw, fmt.Sprintf("session/new %s cwd %s", session, dir)) {
				t.Fatalf("agent saw %q, want the session made in %s", saw, dir)
			}
			h.assertWarm(first.ID)

			// Warm: the same process, the same session, no new spawn.
			second, events := h.turn(conv, "banana")
			h.requireRecall(second, events, []string{"apple"}, "banana")
			if got := attachedOf(t, events); got["via"] != viaWarm || got["sessionId"] != session {
				t.Fatalf("second turn attached %v, want the warm session %v", got, session)
			}
			if _, spawned := h.pid(second.ID); spawned {
				t.Fatal("a warm turn spawned a process")
			}

			// Evicted: a fresh process continues the stored session as the agent can.
			h.evict(conv)
			h.assertReaped(first.ID)
			third, events := h.turn(conv, "cherry")
			h.requireRecall(third, events, c.remembers([]string{"apple", "banana"}), "cherry")
			attached = attachedOf(t, events)
			want := map[string]any{"via": c.via(), "sessionId": session}
			switch c.via() {
			case viaLoad:
				want["replayedUpdates"] = 4.0 // two earlier turns: the prompt and the answer of each
			case viaNew:
				want = map[string]any{"via": viaNew, "sessionId": attached["sessionId"], "previousSessionId": session}
			}
			if !reflect.DeepEqual(attached, want) {
				t.Fatalf("turn after eviction attached %v, want %v", attached, want)
			}

			// Dies in the middle of a turn: that execution fails; the next turn continues.
			crashed, events := h.turn(conv, "crash")
			requireGenericFailure(t, crashed, events)
			h.assertReaped(third.ID)
			fifth, events := h.turn(conv, "date")
			h.requireRecall(fifth, events, c.remembers([]string{"apple", "banana", "cherry"}), "date")
			if got := attachedOf(t, events)["via"]; got != c.via() {
				t.Fatalf("turn after the crash attached via %v, want %s", got, c.via())
			}
		})
	}
}

// A stored session the agent cannot find (its own session store was lost) is not continued: the
// agent answers session/resume with -32002 "session not found", and the turn goes on in a new
// session, saying which one it lost.
func TestSessionTheAgentCannotFindStartsAfresh(t *testing.T) {
	agent := acptest.Prepare(t)
	c := continuityCase{agent.SDKs[len(agent.SDKs)-1], "both"}
	sessions := t.TempDir()
	h := newAgentHarness(t, agent, c, sessions, nil)
	conv := h.conversation()
	first, events := h.turn(conv, "apple")
	h.requireRecall(first, events, nil, "apple")
	lost := attachedOf(t, events)["sessionId"]

	h.evict(conv)
	if err := os.RemoveAll(sessions); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sessions, 0o700); err != nil {
		t.Fatal(err)
	}
	second, events := h.turn(conv, "banana")
	h.requireRecall(second, events, nil, "banana")
	attached := attachedOf(t, events)
	if attached["via"] != viaNew || attached["previousSessionId"] != lost || attached["sessionId"] == lost {
		t.Fatalf("attached %v, want a new session replacing %v", attached, lost)
	}
}

// Two executions of one conversation take turns on its session: the second says it waits for
// the first, runs when the first ends, and recalls it. An execution cancelled while it waits
// ends at once, and the first goes on undisturbed. A cancelled turn the agent ends keeps the
// process warm for the next one.
func TestExecutionsOfAConversationTakeTurns(t *testing.T) {
	agent := acptest.Prepare(t)
	c := continuityCase{agent.SDKs[len(agent.SDKs)-1], "resume"}
	h := newAgentHarness(t, agent, c, t.TempDir(), nil)
	conv := h.conversation()
	release := filepath.Join(t.TempDir(), "release")

	holding := h.startIn(conv, "hold "+release)
	h.awaitDelta(holding, "holding")
	waiting := h.startIn(conv, "fig")
	abandoned := h.startIn(conv, "grape")
	h.awaitWaiting(abandoned, holding)
	if _, err := h.rt.CancelExecution(context.Background(), abandoned, nil); err != nil {
		t.Fatalf("cancel the waiting execution: %v", err)
	}
	if got := h.execution(abandoned).State; got != api.ExecutionStateCancelled {
		t.Fatalf("cancelled while waiting: state %s", got)
	}
	h.awaitWaiting(waiting, holding)
	if got := h.execution(holding).State; got != api.ExecutionStateRunning {
		t.Fatalf("the holding execution is %s while the others wait", got)
	}

	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	held := h.follow(holding, nil)
	requireTerminal(t, h.execution(holding), held, api.ExecutionStateSucceeded)
	events := h.follow(waiting, nil)
	h.requireRecall(h.execution(waiting), events, nil, "fig") // "hold" is not remembered
	if got := attachedOf(t, events)["via"]; got != viaWarm {
		t.Fatalf("the waiting execution attached via %v, want the warm session", got)
	}

	// Cancelled: the agent ends its turn (stop reason cancelled), so the process is kept.
	cancelled := h.startIn(conv, "hold "+filepath.Join(t.TempDir(), "never"))
	h.awaitDelta(cancelled, "holding")
	if _, err := h.rt.CancelExecution(context.Background(), cancelled, nil); err != nil {
		t.Fatalf("cancel the holding execution: %v", err)
	}
	after, events := h.turn(conv, "kiwi")
	h.requireRecall(after, events, []string{"fig"}, "kiwi")
	if got := attachedOf(t, events)["via"]; got != viaWarm {
		t.Fatalf("after a cancelled turn attached via %v, want the warm session", got)
	}
}

// The pool is bounded: at max_processes the least recently used warm process is ended to make
// room, and when every process is busy a new execution waits for one (and says so); a warm
// process ends after idle_timeout; Close ends the rest. No process and no descriptor is left.
func TestPoolBoundsAndLeaks(t *testing.T) {
	agent := acptest.Prepare(t)
	c := continuityCase{agent.SDKs[0], "load"}
	children, fds := childProcesses(t), openDescriptors(t)
	func() {
		h := newAgentHarness(t, agent, c, t.TempDir(), func(cfg *Config) { cfg.MaxProcesses = 1 })
		a, b := h.conversation(), h.conversation()
		first, events := h.turn(a, "one")
		h.requireRecall(first, events, nil, "one")
		h.assertWarm(first.ID)

		// Room for b's process: a's warm one goes. b is another session, in another directory.
		second, events := h.turn(b, "two")
		h.requireRecall(second, events, nil, "two")
		h.assertReaped(first.ID)
		h.assertWarm(second.ID)
		if saw := tsAgentSaw(t, h.agentLog); !slices.ContainsFunc(saw, func(line string) bool {
			return strings.HasPrefix(line, "session/new "+attachedOf(t, events)["sessionId"].(string)+" cwd "+filepath.Join(h.provider.settings.conversationRoot, b))
		}) {
			t.Fatalf("agent saw %q, want b's session made in b's own directory", saw)
		}

		// b's process is busy: a's execution waits for it, then continues a's session.
		release := filepath.Join(t.TempDir(), "release")
		holding := h.startIn(b, "hold "+release)
		h.awaitDelta(holding, "holding")
		queued := h.startIn(a, "three")
		h.awaitProviderEvent(queued, func(m map[string]any) bool {
			params, _ := m["params"].(map[string]any)
			return m["method"] == "turn.waiting" && reflect.DeepEqual(params, map[string]any{"for": "process", "maxProcesses": 1.0})
		})
		if err := os.WriteFile(release, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		events = h.follow(queued, nil)
		h.requireRecall(h.execution(queued), events, []string{"one"}, "three")
		h.assertReaped(second.ID)
		h.close()
	}()
	// The harness closed the runtime and the provider, and checked every agent reaped.
	if got := childProcesses(t); got != children {
		t.Fatalf("%d child processes after the provider closed, %d before", got, children)
	}
	if got := openDescriptors(t); got > fds {
		t.Fatalf("%d open descriptors after the provider closed, %d before", got, fds)
	}

	// A warm process ends after idle_timeout.
	h := newAgentHarness(t, agent, c, t.TempDir(), func(cfg *Config) { cfg.IdleTimeout = Duration(50e6) })
	idle, events := h.turn(h.conversation(), "four")
	h.requireRecall(idle, events, nil, "four")
	h.awaitExit(idle.ID)
	if h.provider.pool.warmCount() != 0 {
		t.Fatal("an idle process is still counted warm")
	}
}

// An agent that never answers the probe is served with continuity unsupported, and
// requiredCapabilities ["conversation.continuity"] is refused before anything starts; an agent
// that answers with another protocol version cannot serve at all: Start says so.
func TestContinuityBeforeTheAgentAnswers(t *testing.T) {
	h := newStartedHarness(t, Config{Command: "/nonexistent/acp-agent-for-tests"}, "", backend.Options{})
	if level := h.provider.Manifest().Capabilities["conversation.continuity"]; level != api.SupportLevelUnsupported {
		t.Fatalf("continuity before the agent answered = %s, want unsupported", level)
	}
	_, _, err := h.rt.StartExecution(context.Background(), api.StartExecutionRequest{
		ConversationID: h.conversation(), ProviderID: h.provider.Manifest().ID, Input: "hi",
		RequiredCapabilities: &[]string{"conversation.continuity"},
	})
	var problem *backend.Error
	if !errors.As(err, &problem) || problem.Code != backend.CodeCapabilityUnsupported {
		t.Fatalf("StartExecution requiring continuity = %v, want CAPABILITY_UNSUPPORTED", err)
	}

	wrong, err := New(Config{Command: fixtureAgent, Env: map[string]string{"ACP_FIXTURE_SCENARIO": "wrong-version"}})
	if err != nil {
		t.Fatal(err)
	}
	defer wrong.Close()
	if err := wrong.Start(context.Background(), nil); !errors.Is(err, errProtocolVersion) {
		t.Fatalf("Start on an agent of another protocol version = %v, want errProtocolVersion", err)
	}
}

// Retention forgets a conversation whose last execution it removed: its warm process ends, its
// working directory goes, and its stored session is deleted, so the next execution on the
// conversation starts afresh without a previous session.
func TestRetentionForgetsTheConversation(t *testing.T) {
	agent := acptest.Prepare(t)
	c := continuityCase{agent.SDKs[0], "resume"}
	h := newAgentHarness(t, agent, c, t.TempDir(), nil)
	conv := h.conversation()
	first, events := h.turn(conv, "lime")
	h.requireRecall(first, events, nil, "lime")
	dir := filepath.Join(h.provider.settings.conversationRoot, conv)

	keys, err := h.provider.ForgetConversation(context.Background(), conv)
	if err != nil || !slices.Equal(keys, []string{conv}) {
		t.Fatalf("ForgetConversation = %v, %v; want the conversation's key", keys, err)
	}
	h.assertReaped(first.ID)
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the conversation's directory after forgetting: %v", err)
	}
}

// conversation creates a conversation and returns its id.
func (h *harness) conversation() string {
	h.t.Helper()
	conv, err := h.rt.CreateConversation(context.Background(), nil)
	if err != nil {
		h.t.Fatalf("CreateConversation: %v", err)
	}
	return conv.ID
}

// startIn starts an execution of conv with input and the required capabilities.
func (h *harness) startIn(conv, input string, required ...string) string {
	h.t.Helper()
	req := api.StartExecutionRequest{ConversationID: conv, ProviderID: h.provider.Manifest().ID, Input: input}
	if len(required) > 0 {
		req.RequiredCapabilities = &required
	}
	exec, _, err := h.rt.StartExecution(context.Background(), req)
	if err != nil {
		h.t.Fatalf("StartExecution: %v", err)
	}
	return exec.ID
}

// turn runs one execution of conv to its end.
func (h *harness) turn(conv, input string, required ...string) (api.Execution, []api.RuntimeEvent) {
	h.t.Helper()
	id := h.startIn(conv, input, required...)
	events := h.follow(id, nil)
	return h.execution(id), events
}

// requireRecall checks the remembering agent's answer: it recalls before, and heard input —
// as the final output and as the execution's only text (no replayed history).
func (h *harness) requireRecall(exec api.Execution, events []api.RuntimeEvent, before []string, input string) {
	h.t.Helper()
	requireTerminal(h.t, exec, events, api.ExecutionStateSucceeded)
	if before == nil {
		before = []string{}
	}
	recalled := fmt.Sprintf("%q", before)
	if len(before) > 0 {
		recalled = `["` + strings.Join(before, `","`) + `"]`
	}
	want := fmt.Sprintf("I remember %s; now %q.", recalled, input)
	if exec.FinalOutput == nil || *exec.FinalOutput != want {
		h.t.Fatalf("final output = %v, want %q", deref(exec.FinalOutput), want)
	}
	if got := deltas(events); !slices.Equal(got, []string{want}) {
		h.t.Fatalf("text deltas = %q, want only %q", got, want)
	}
}

// attachedOf is the params of the execution's session.attached event.
func attachedOf(t *testing.T, events []api.RuntimeEvent) map[string]any {
	t.Helper()
	for _, e := range ofType(events, api.StandardEventTypeProviderEvent) {
		data := typed(e.Data.AsProviderEventData())
		if data["method"] == "session.attached" {
			return data["params"].(map[string]any)
		}
	}
	t.Fatalf("no session.attached event:%s", describe(events))
	return nil
}

// evict ends the conversation's warm process, as the pool does when it needs the room.
func (h *harness) evict(conv string) {
	h.t.Helper()
	s := h.provider.pool.take(conv)
	if s == nil {
		h.t.Fatalf("no warm process for %s", conv)
	}
	if err := h.provider.pool.retire(s); err != nil {
		h.t.Fatalf("retire: %v", err)
	}
}

// awaitEvent follows the execution until an event matches; what awaits says what was awaited
// when the execution ends first.
func (h *harness) awaitEvent(id, awaits string, match func(api.RuntimeEvent) bool) {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for stored, err := range backend.FollowExecution(ctx, h.rt, id, 0) {
		if err != nil {
			h.t.Fatalf("Follow: %v", err)
		}
		e, err := stored.Decode()
		if err != nil {
			h.t.Fatal(err)
		}
		if match(e) {
			return
		}
	}
	h.t.Fatalf("execution %s ended without %s", id, awaits)
}

// awaitProviderEvent follows the execution until a provider.event matches.
func (h *harness) awaitProviderEvent(id string, match func(map[string]any) bool) {
	h.t.Helper()
	h.awaitEvent(id, "the provider.event awaited", func(e api.RuntimeEvent) bool {
		return e.Type == api.StandardEventTypeProviderEvent && match(typed(e.Data.AsProviderEventData()))
	})
}

// awaitDelta follows the execution until it emits text.
func (h *harness) awaitDelta(id, text string) {
	h.t.Helper()
	h.awaitEvent(id, fmt.Sprintf("the text %q", text), func(e api.RuntimeEvent) bool {
		return e.Type == api.StandardEventTypeOutputTextDelta && typed(e.Data.AsTextDeltaData()).Text == text
	})
}

// awaitWaiting follows the execution until it says it waits for holder's turn to end.
func (h *harness) awaitWaiting(id, holder string) {
	h.t.Helper()
	h.awaitProviderEvent(id, func(m map[string]any) bool {
		params, _ := m["params"].(map[string]any)
		return m["method"] == "turn.waiting" && reflect.DeepEqual(params, map[string]any{"for": "conversation", "executionId": holder})
	})
}

// awaitExit waits until the agent the execution spawned has been reaped.
func (h *harness) awaitExit(id string) {
	h.t.Helper()
	for deadline := 0; h.exitStatus(id) == ""; deadline++ {
		if deadline > 1000 { // a guard against a hang only: 10 s
			h.t.Fatalf("the agent of %s was not reaped", id)
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.assertReaped(id)
}

// childProcesses counts the test process's children (the agents, reaped or not).
func childProcesses(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	self, n := fmt.Sprint(os.Getpid()), 0
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // not a process, or gone
		}
		// The parent's pid is the second field after the parenthesised command name.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == self {
			n++
		}
	}
	return n
}

// openDescriptors counts the test process's open file descriptors.
func openDescriptors(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}
