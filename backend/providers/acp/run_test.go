package acp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Streamed deltas "", "ACP ", "fixture" → finalOutput "ACP fixture" (§11.4 integration facts).
func TestStreamedDeltasBecomeTheFinalOutput(t *testing.T) {
	h := newHarness(t, "stream", nil)
	exec, events := h.run("hello", nil)

	last := requireTerminal(t, exec, events, api.ExecutionStateSucceeded)
	if typed(last.Data.AsRunCompletedData()).FinalOutput != "ACP fixture" || exec.FinalOutput == nil || *exec.FinalOutput != "ACP fixture" {
		t.Fatalf("final output = %v / %v, want ACP fixture", last.Data, exec.FinalOutput)
	}
	if got := deltas(events); !slices.Equal(got, []string{"", "ACP ", "fixture"}) {
		t.Fatalf("deltas = %q, want \"\", \"ACP \", \"fixture\"", got)
	}
	// Each session/update is a provider.event carrying the agent's params, and comes before the
	// delta it produced; the turn ends with turn.completed.
	var methods []string
	for _, e := range events {
		switch e.Type {
		case api.StandardEventTypeProviderEvent:
			if typed(e.Data.AsProviderEventData())["provider"] != "acp" {
				t.Fatalf("provider.event without provider acp: %v", e.Data)
			}
			methods = append(methods, typed(e.Data.AsProviderEventData())["method"].(string))
		case api.StandardEventTypeOutputTextDelta:
			methods = append(methods, "delta")
		}
	}
	want := []string{"session.attached", "session/update", "delta", "session/update", "delta", "session/update", "delta", "turn.completed"}
	if !slices.Equal(methods, want) {
		t.Fatalf("provider events and deltas = %v, want %v", methods, want)
	}
	// The turn says which native session it prompts, and how it got it: a new one here.
	attached := typed(ofType(events, api.StandardEventTypeProviderEvent)[0].Data.AsProviderEventData())["params"]
	if !reflect.DeepEqual(attached, map[string]any{"sessionId": "fixture-session", "via": "new"}) {
		t.Fatalf("session.attached = %v", attached)
	}
	update := typed(ofType(events, api.StandardEventTypeProviderEvent)[2].Data.AsProviderEventData())["params"].(map[string]any)
	wantParams := map[string]any{
		"sessionId": "fixture-session",
		"update": map[string]any{
			"sessionUpdate": "agent_message_chunk",
			"content":       map[string]any{"type": "text", "text": "ACP "},
		},
	}
	if !reflect.DeepEqual(update, wantParams) {
		t.Fatalf("session/update params = %v, want %v", update, wantParams)
	}
	completed := typed(ofType(events, api.StandardEventTypeProviderEvent)[4].Data.AsProviderEventData())
	if !reflect.DeepEqual(completed["params"], map[string]any{"stopReason": "end_turn"}) {
		t.Fatalf("turn.completed = %v", completed)
	}
	h.assertWarm(exec.ID)
}

// A stop reason other than cancelled is a normal end of the turn.
func TestOtherStopReasonsSucceedAndAreReported(t *testing.T) {
	h := newHarness(t, "stream", func(c *Config) { c.Env["ACP_FIXTURE_STOP_REASON"] = "max_tokens" })
	exec, events := h.run("hello", nil)
	requireTerminal(t, exec, events, api.ExecutionStateSucceeded)
	native := ofType(events, api.StandardEventTypeProviderEvent)
	last := typed(native[len(native)-1].Data.AsProviderEventData())
	if last["method"] != "turn.completed" || !reflect.DeepEqual(last["params"], map[string]any{"stopReason": "max_tokens"}) {
		t.Fatalf("last provider.event = %v, want turn.completed with max_tokens", last)
	}
}

// The wire sequence and its parameters: initialize (protocol v1, fs and terminal refused),
// session/new {cwd, mcpServers: []}, session/prompt with the input as one text block.
func TestWireSequenceAndParameters(t *testing.T) {
	cwd := t.TempDir()
	h := newHarness(t, "inspect", func(c *Config) { c.Cwd = cwd })
	exec, events := h.run("what do you see?", nil)
	requireTerminal(t, exec, events, api.ExecutionStateSucceeded)

	var seen map[string]any
	if err := json.Unmarshal([]byte(*exec.FinalOutput), &seen); err != nil {
		t.Fatalf("fixture report %q: %v", *exec.FinalOutput, err)
	}
	resolved, _ := filepath.EvalSymlinks(cwd)
	want := map[string]any{
		"protocolVersion": 1.0,
		"readTextFile":    false,
		"writeTextFile":   false,
		"terminal":        false,
		"cwd":             cwd,
		"mcpServers":      []any{},
		"prompt":          []any{map[string]any{"type": "text", "text": "what do you see?"}},
		"wd":              resolved,
	}
	if !reflect.DeepEqual(seen, want) {
		t.Fatalf("agent saw %v\nwant %v", seen, want)
	}

	wire := h.wireLines()
	var methods []string
	for _, line := range wire {
		var msg struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal([]byte(line), &msg)
		if msg.Method != "" {
			methods = append(methods, msg.Method)
		}
	}
	if !slices.Equal(methods, []string{"initialize", "session/new", "session/prompt"}) {
		t.Fatalf("client requests = %v", methods)
	}
	// The refused capabilities are explicit on the wire, as the reference sends them.
	if !strings.Contains(wire[0], `"clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false}`) {
		t.Fatalf("initialize = %s", wire[0])
	}
}

// The child gets only the configured environment: nothing of the server's leaks in.
func TestAgentGetsOnlyTheConfiguredEnvironment(t *testing.T) {
	t.Setenv("ACP_TEST_SERVER_SECRET", "must-not-leak")
	h := newHarness(t, "env", func(c *Config) { c.Env["GREETING"] = "hello world" })
	exec, events := h.run("", nil)
	requireTerminal(t, exec, events, api.ExecutionStateSucceeded)

	got := strings.Split(*exec.FinalOutput, "\n")
	want := []string{"ACP_FIXTURE_LOG=" + h.agentLog, "ACP_FIXTURE_SCENARIO=env", "GREETING=hello world"}
	if !slices.Equal(got, want) {
		t.Fatalf("agent environment = %q, want %q", got, want)
	}
	if os.Getenv("ACP_TEST_SERVER_SECRET") == "" {
		t.Fatal("the server's own variable should still be set in the test process")
	}
}

// Filesystem and terminal requests are refused with JSON-RPC "method not found" (-32601), and
// the turn goes on.
func TestFilesystemAndTerminalRequestsAreRefused(t *testing.T) {
	h := newHarness(t, "fs-terminal", nil)
	exec, events := h.run("read a file", nil)
	requireTerminal(t, exec, events, api.ExecutionStateSucceeded)
	if *exec.FinalOutput != "fs:-32601 terminal:-32601" {
		t.Fatalf("agent saw %q, want both refused with -32601", *exec.FinalOutput)
	}
}

// JSON syntax errors get a parse-error reply and are tolerated (the reference's behaviour).
func TestMalformedJSONIsToleratedWithAParseErrorReply(t *testing.T) {
	h := newHarness(t, "malformed-json", nil)
	exec, events := h.run("hello", nil)
	requireTerminal(t, exec, events, api.ExecutionStateSucceeded)
	if *exec.FinalOutput != "ACP fixture" {
		t.Fatalf("final output = %q", *exec.FinalOutput)
	}
	found := false
	for _, line := range h.wireLines() {
		if strings.Contains(line, `"code":-32700`) {
			found = true
		}
	}
	if !found {
		t.Fatalf("no parse-error reply on the wire: %v", h.wireLines())
	}
}

// ACP extension notifications ("_…") are ignored, as ACP requires of receivers that do not know
// them.
func TestExtensionNotificationsAreIgnored(t *testing.T) {
	h := newHarness(t, "extension-notification", nil)
	exec, events := h.run("hello", nil)
	requireTerminal(t, exec, events, api.ExecutionStateSucceeded)
	for _, e := range ofType(events, api.StandardEventTypeProviderEvent) {
		if strings.HasPrefix(typed(e.Data.AsProviderEventData())["method"].(string), "_") {
			t.Fatalf("extension notification surfaced: %v", e.Data)
		}
	}
}

// Per-execution config must be empty, and the agent is never spawned otherwise.
func TestExecutionConfigMustBeEmpty(t *testing.T) {
	h := newHarness(t, "stream", nil)
	id := h.start("hello", api.JSONObject{"model": "something"})
	events := h.follow(id, nil)
	exec := h.execution(id)
	last := requireTerminal(t, exec, events, api.ExecutionStateFailed)
	want := "ACP execution config must be empty; configure the trusted provider constructor"
	if typed(last.Data.AsRunFailedData()).Message != want {
		t.Fatalf("failure = %v, want %q", last.Data, want)
	}
	if _, spawned := h.pid(id); spawned {
		t.Fatal("an agent was spawned for a refused execution")
	}
}

// An empty config object is the same as none.
func TestEmptyExecutionConfigIsAccepted(t *testing.T) {
	h := newHarness(t, "stream", nil)
	id := h.start("hello", api.JSONObject{})
	events := h.follow(id, nil)
	requireTerminal(t, h.execution(id), events, api.ExecutionStateSucceeded)
}
