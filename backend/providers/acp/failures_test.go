package acp

import (
	"errors"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Bad version, crash, foreign session, oversized message, bad envelope, bad params … → failed
// with "ACP agent request failed", no diagnostics leaked, the agent reaped (§11.4 integration
// facts). cause is the internal reason, checked so that each case fails for the right reason.
func TestAgentFailuresAreGeneric(t *testing.T) {
	cases := map[string]struct {
		env   map[string]string
		limit int
		cause error // nil: any (a crash surfaces as a lost connection)
	}{
		"wrong-version":         {cause: errProtocolVersion},
		"crash":                 {},
		"foreign-session":       {cause: errForeignSession},
		"oversized":             {env: map[string]string{"ACP_FIXTURE_BYTES": "8192"}, limit: 4096, cause: errMessageTooLarge},
		"bad-envelope":          {cause: errBadEnvelope},
		"bad-params":            {cause: errInvalidParams},
		"bad-permission-params": {cause: errInvalidParams},
		"unknown-notification":  {cause: errUnknownNotification},
		"unmatched-response":    {cause: errUnmatchedResponse},
	}
	for scenario, tc := range cases {
		t.Run(scenario, func(t *testing.T) {
			h := newHarness(t, scenario, func(c *Config) {
				for k, v := range tc.env {
					c.Env[k] = v
				}
				c.MaxMessageBytes = tc.limit
			})
			exec, events := h.run("hello", nil)
			requireGenericFailure(t, exec, events)
			if tc.cause != nil && !errors.Is(h.failure(exec.ID), tc.cause) {
				t.Fatalf("failure cause = %v, want %v", h.failure(exec.ID), tc.cause)
			}
			h.assertReaped(exec.ID)
		})
	}
}

// The limit is inclusive: a message of exactly max_message_bytes passes, one byte more fails.
func TestMessageLimitIsExact(t *testing.T) {
	// The fixture's chunk line: acp-go-sdk's encoding of a session/update with 1000 "x".
	line := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"fixture-session",` +
		`"update":{"content":{"text":"` + strings.Repeat("x", 1000) + `","type":"text"},"sessionUpdate":"agent_message_chunk"}}}`
	scenario := func(limit int) func(*Config) {
		return func(c *Config) {
			c.Env["ACP_FIXTURE_BYTES"] = "1000"
			c.MaxMessageBytes = limit
		}
	}

	exact := newHarness(t, "oversized", scenario(len(line)))
	exec, events := exact.run("", nil)
	requireTerminal(t, exec, events, api.ExecutionStateSucceeded)

	short := newHarness(t, "oversized", scenario(len(line)-1))
	exec, events = short.run("", nil)
	requireGenericFailure(t, exec, events)
	if !errors.Is(short.failure(exec.ID), errMessageTooLarge) {
		t.Fatalf("failure cause = %v", short.failure(exec.ID))
	}
}

// A command that cannot be started fails generically, without leaking the path or the OS error.
func TestUnstartableCommandFails(t *testing.T) {
	h := newHarnessWith(t, Config{Command: "/nonexistent/acp-agent-for-tests"}, "")
	exec, events := h.run("hello", nil)
	requireGenericFailure(t, exec, events)
	if !errors.Is(h.failure(exec.ID), errAgentUnavailable) {
		t.Fatalf("failure cause = %v", h.failure(exec.ID))
	}
}
