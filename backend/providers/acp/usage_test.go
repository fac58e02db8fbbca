package acp

import (
	"encoding/json"
	"testing"

	"github.com/harness-edge/harness-edge/internal/acptest"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// An agent on the official TypeScript SDK (both pinned lines) reports usage across turns: each
// execution carries its turn's tokens (the prompt result's usage) and its turn's cost — the
// growth of the session's cumulative cost (usage_update), also for the turn a fresh process
// serves after the warm one was evicted (the baseline is stored with the conversation).
func TestUsageAcrossTurns(t *testing.T) {
	agent := acptest.Prepare(t)
	for _, sdk := range agent.SDKs {
		t.Run(sdk.Version, func(t *testing.T) {
			t.Parallel()
			h := newAgentHarness(t, agent, continuityCase{sdk, "resume"}, t.TempDir(), func(c *Config) {
				c.Args = append(c.Args, "--usage")
			})
			conv := h.conversation()
			want := []string{
				`{"contextSize":200000,"contextUsed":107,"cost":{"amount":"0.0125","currency":"USD"},"inputTokens":100,"outputTokens":7,"totalTokens":107}`,
				`{"cachedReadTokens":50,"contextSize":200000,"contextUsed":214,"cost":{"amount":"0.0125","currency":"USD"},"inputTokens":200,"outputTokens":7,"totalTokens":207}`,
				`{"cachedReadTokens":50,"contextSize":200000,"contextUsed":321,"cost":{"amount":"0.0125","currency":"USD"},"inputTokens":300,"outputTokens":7,"totalTokens":307}`,
			}
			for i, input := range []string{"apple", "banana", "cherry"} {
				if i == 2 {
					h.evict(conv) // a fresh process resumes the session: the cost goes on from 0.025
				}
				exec, events := h.turn(conv, input)
				requireTerminal(t, exec, events, api.ExecutionStateSucceeded)
				got, _ := json.Marshal(exec.Usage)
				if string(got) != want[i] {
					t.Errorf("turn %d usage %s, want %s", i+1, got, want[i])
				}
				reports := 0
				for _, e := range events {
					data, _ := e.Data.AsProviderEventData()
					if e.Type == api.StandardEventTypeProviderEvent && data["provider"] == "harness" && data["type"] == "usage" {
						reports++
					}
				}
				if reports != 2 { // the usage_update, then the prompt result
					t.Errorf("turn %d: %d usage events, want 2", i+1, reports)
				}
			}
		})
	}
}
