package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// tsAgentDir holds an ACP agent written on the official TypeScript SDK. Its package.json installs
// each release line of @agentclientprotocol/sdk we interoperate with under an npm alias, pinned
// exactly; package-lock.json is committed, node_modules is not.
const tsAgentDir = "testdata/ts-agent"

// tsSDK is one release line of the TypeScript SDK: the npm alias it is installed under (what the
// agent's ACP_TS_SDK names) and the version package.json pins.
type tsSDK struct {
	alias, version string
}

// prepareTypeScriptAgent returns node's path, the agent script and the SDK lines package.json
// pins, installing the locked dependencies with `npm ci` when node_modules is missing or holds
// other versions than the pins. Node and npm are required, not optional: a machine without them
// must fail this test loudly rather than skip the interoperability proof.
func prepareTypeScriptAgent(t *testing.T) (node, script string, sdks []tsSDK) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is required for the ACP interoperability test (install Node.js 20+ with npm): %v", err)
	}
	dir, err := filepath.Abs(tsAgentDir)
	if err != nil {
		t.Fatal(err)
	}
	sdks = pinnedSDKs(t, dir)
	if !installed(dir, sdks) {
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
		if !installed(dir, sdks) {
			t.Fatalf("npm ci in %s did not install the pinned SDKs %v", dir, sdks)
		}
	}
	return node, filepath.Join(dir, "agent.mjs"), sdks
}

// pinnedSDKs reads the aliases of @agentclientprotocol/sdk from package.json, in alias order.
func pinnedSDKs(t *testing.T, dir string) []tsSDK {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(data, &manifest); err != nil {
		t.Fatalf("%s/package.json: %v", dir, err)
	}
	var sdks []tsSDK
	for alias, spec := range manifest.Dependencies {
		if version, ok := strings.CutPrefix(spec, "npm:@agentclientprotocol/sdk@"); ok {
			sdks = append(sdks, tsSDK{alias: alias, version: version})
		}
	}
	slices.SortFunc(sdks, func(a, b tsSDK) int { return strings.Compare(a.alias, b.alias) })
	if len(sdks) < 2 {
		t.Fatalf("%s/package.json pins %d @agentclientprotocol/sdk lines, want the old and the current one", dir, len(sdks))
	}
	return sdks
}

// installed reports whether node_modules holds every pinned SDK at its pinned version.
func installed(dir string, sdks []tsSDK) bool {
	for _, sdk := range sdks {
		data, err := os.ReadFile(filepath.Join(dir, "node_modules", sdk.alias, "package.json"))
		if err != nil {
			return false
		}
		var pkg struct{ Name, Version string }
		if json.Unmarshal(data, &pkg) != nil || pkg.Name != "@agentclientprotocol/sdk" || pkg.Version != sdk.version {
			return false
		}
	}
	return true
}

// Our provider drives agents built on each pinned line of the official TypeScript SDK — which
// validates every message it receives against the ACP schema — through the whole exchange:
// initialize (what the agent saw of it is in its first message), text, a tool_call update, and a
// permission request that the caller approves, denies, or cancels the execution at.
func TestInteropWithTypeScriptSDKAgents(t *testing.T) {
	node, script, sdks := prepareTypeScriptAgent(t)
	cases := []struct {
		name string
		// answer is the caller's reply to the action; nil cancels the execution instead.
		answer *api.ActionResponse
		state  api.ExecutionState
		option string // what the agent reports it was answered
	}{
		{"approve", &api.ActionResponse{Approved: approved(true)}, api.ExecutionStateSucceeded, "allow"},
		{"deny", &api.ActionResponse{Approved: approved(false)}, api.ExecutionStateSucceeded, "reject"},
		{"cancel", nil, api.ExecutionStateCancelled, "cancelled"},
	}
	for _, sdk := range sdks {
		for _, tc := range cases {
			t.Run(sdk.version+"/"+tc.name, func(t *testing.T) {
				agentLog := filepath.Join(t.TempDir(), "agent.log")
				h := newHarnessWith(t, Config{
					ID:            "ts-agent",
					Command:       node,
					Args:          []string{script},
					Env:           map[string]string{"NODE_NO_WARNINGS": "1", "ACP_TS_SDK": sdk.alias, "ACP_TS_AGENT_LOG": agentLog},
					ShutdownGrace: Duration(testGrace),
				}, "")

				id := h.start("hello from Go", nil)
				var action api.ActionRequest
				var cancelled <-chan error
				events := h.follow(id, func(e api.RuntimeEvent) {
					if e.Type != api.StandardEventTypeActionRequired {
						return
					}
					action = typed(e.Data.AsActionRequest())
					if tc.answer != nil {
						h.respond(id, action.ID, *tc.answer)
					} else {
						cancelled = h.cancelAsync(id, "caller stopped")
					}
				})
				if cancelled != nil {
					if err := <-cancelled; err != nil {
						t.Fatalf("CancelExecution: %v", err)
					}
				}
				exec := h.execution(id)

				// initialize and text: the agent's first message says what it was sent.
				greeting := fmt.Sprintf(`TypeScript agent on SDK %s got "hello from Go"`+
					` (protocol 1, fs.read false, fs.write false, terminal false, mcpServers []).`, sdk.version)
				// tool_call: announced before the permission, and recorded in the agent's order.
				if got, want := agentOrder(events), []string{"update agent_message_chunk", fmt.Sprintf("delta %q", greeting),
					"update tool_call", "action.required"}; !slices.Equal(got, want) {
					t.Fatalf("events up to action.required = %q\nwant %q", got, want)
				}
				if action.Title != "Write greeting.txt" || action.Payload["toolCallId"] != "ts-call-1" || len(action.Payload["options"].([]any)) != 3 {
					t.Fatalf("action = %+v", action)
				}
				if got := tsAgentSaw(t, agentLog); !slices.Contains(got, "permission "+tc.option) {
					t.Fatalf("agent recorded %q, want it answered %s", got, tc.option)
				}

				if tc.answer == nil {
					requireCleanCancel(t, h, exec, events)
					// Teardown answered the permission cancelled and sent session/cancel before
					// closing stdin; the SDK's agent took both.
					if got := tsAgentSaw(t, agentLog); !slices.Contains(got, "session/cancel ts-session") {
						t.Fatalf("agent recorded %q, want session/cancel", got)
					}
				} else {
					requireTerminal(t, exec, events, tc.state)
					want := greeting + " Permission outcome: " + tc.option + "."
					if exec.FinalOutput == nil || *exec.FinalOutput != want {
						t.Fatalf("final output = %v\nwant %q", exec.FinalOutput, want)
					}
					if got := strings.Join(deltas(events), ""); got != want {
						t.Fatalf("deltas = %q", got)
					}
					h.assertReaped(id)
				}
				// The SDK's agent ends when its stdin does: the polite first step of teardown was
				// enough.
				if status := h.exitStatus(id); status != "exit status 0" {
					t.Fatalf("TypeScript agent exit = %q, want a normal exit on stdin close", status)
				}
			})
		}
	}
}

// tsAgentSaw is the TypeScript agent's record (ACP_TS_AGENT_LOG), one fact per line.
func tsAgentSaw(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(data) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}
