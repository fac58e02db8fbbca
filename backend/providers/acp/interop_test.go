package acp

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/internal/acptest"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Our provider drives agents built on each pinned line of the official TypeScript SDK — which
// validates every message it receives against the ACP schema — through the whole exchange:
// initialize (what the agent saw of it is in its first message), text, a tool_call update, and a
// permission request that the caller approves, denies, or cancels the execution at.
func TestInteropWithTypeScriptSDKAgents(t *testing.T) {
	agent := acptest.Prepare(t)
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
	for _, sdk := range agent.SDKs {
		for _, tc := range cases {
			t.Run(sdk.Version+"/"+tc.name, func(t *testing.T) {
				agentLog := filepath.Join(t.TempDir(), "agent.log")
				env := agent.Env(sdk)
				env["ACP_TS_AGENT_LOG"] = agentLog
				h := newHarnessWith(t, Config{
					ID:            "ts-agent",
					Command:       agent.Node,
					Args:          []string{agent.Script},
					Env:           env,
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
					` (protocol 1, fs.read false, fs.write false, terminal false, mcpServers []).`, sdk.Version)
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
					// The agent ended the cancelled turn, so its process stays warm.
					h.assertWarm(id)
				} else {
					requireTerminal(t, exec, events, tc.state)
					want := greeting + " Permission outcome: " + tc.option + "."
					if exec.FinalOutput == nil || *exec.FinalOutput != want {
						t.Fatalf("final output = %v\nwant %q", exec.FinalOutput, want)
					}
					if got := strings.Join(deltas(events), ""); got != want {
						t.Fatalf("deltas = %q", got)
					}
					h.assertWarm(id)
				}
				// The SDK's agent ends when its stdin does: the polite first step of teardown
				// (when the provider closes) is enough.
				h.provider.Close()
				h.assertReaped(id)
				if tc.answer == nil {
					// The cancellation answered the permission cancelled, then sent
					// session/cancel; the SDK's agent took both (read once it has exited).
					if got := tsAgentSaw(t, agentLog); !slices.Contains(got, "session/cancel ts-session") {
						t.Fatalf("agent recorded %q, want session/cancel", got)
					}
				}
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
