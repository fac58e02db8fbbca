package acp

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// tsAgentDir holds an ACP agent written on the official TypeScript SDK (package.json pins
// @agentclientprotocol/sdk; package-lock.json is committed, node_modules is not).
const tsAgentDir = "testdata/ts-agent"

// prepareTypeScriptAgent returns node's path and the agent script, installing the locked
// dependencies with `npm ci` when they are missing. Node and npm are required, not optional: a
// machine without them must fail this test loudly rather than skip the interoperability proof.
func prepareTypeScriptAgent(t *testing.T) (node, script string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is required for the ACP interoperability test (install Node.js 20+ with npm): %v", err)
	}
	dir, err := filepath.Abs(tsAgentDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@agentclientprotocol", "sdk", "package.json")); err != nil {
		npm, err := exec.LookPath("npm")
		if err != nil {
			t.Fatalf("npm is required to install the TypeScript ACP SDK for the interoperability test: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		install := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		install.Dir = dir
		if out, err := install.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	return node, filepath.Join(dir, "agent.mjs")
}

// Our provider drives an agent built on the official TypeScript SDK — which validates every
// message it receives against the ACP schema — to succeeded with the approved option.
func TestInteropWithTypeScriptSDKAgent(t *testing.T) {
	node, script := prepareTypeScriptAgent(t)
	h := newHarnessWith(t, Config{
		ID:            "ts-agent",
		Command:       node,
		Args:          []string{script},
		Env:           map[string]string{"NODE_NO_WARNINGS": "1"},
		ShutdownGrace: Duration(testGrace),
	}, "")

	id := h.start("hello from Go", nil)
	var action api.ActionRequest
	events := h.follow(id, func(e api.RuntimeEvent) {
		if e.Type == api.StandardEventTypeActionRequired {
			action = typed(e.Data.AsActionRequest())
			h.respond(id, action.ID, api.ActionResponse{Approved: approved(true)})
		}
	})
	exec := h.execution(id)
	requireTerminal(t, exec, events, api.ExecutionStateSucceeded)

	want := `TypeScript agent got "hello from Go" (protocol 1, fs.read false, fs.write false, terminal false, mcpServers []).` +
		` Permission outcome: allow.`
	if exec.FinalOutput == nil || *exec.FinalOutput != want {
		t.Fatalf("final output = %v\nwant %q", exec.FinalOutput, want)
	}
	if action.Title != "Write greeting.txt" {
		t.Fatalf("action = %+v", action)
	}
	payload := action.Payload
	if payload["toolCallId"] != "ts-call-1" || len(payload["options"].([]any)) != 3 {
		t.Fatalf("payload = %v", payload)
	}
	if got := strings.Join(deltas(events), ""); got != want {
		t.Fatalf("deltas = %q", got)
	}
	h.assertReaped(id)
	// The SDK's agent ends when its stdin does: the polite first step of teardown was enough.
	if status := h.exitStatus(id); status != "exit status 0" {
		t.Fatalf("TypeScript agent exit = %q, want a normal exit on stdin close", status)
	}
}
