package caddymodule

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/providers/a2a"
)

func init() {
	caddy.RegisterModule(A2AProvider{})
}

// A2AProvider serves a remote agent that speaks A2A (Agent2Agent 1.0 or 0.3, whichever its card
// offers, 1.0 first) behind the edge, its manifest derived from the agent card (see docs/a2a.md):
//
//	provider a2a [<id>] {              # id default: a2a
//		url             <base URL or agent-card URL>
//		bearer_token    <token>
//		header          <name> <value>
//		card_timeout    <duration>
//		request_timeout <duration>
//		gone_timeout    <duration>
//		poll_interval   <duration>
//	}
//
// Values may use Caddy's placeholders ({env.A2A_TOKEN}), resolved when the config loads.
type A2AProvider struct {
	// ID is the provider id clients use. Default "a2a".
	ID string `json:"id,omitempty"`
	// URL is the agent's base URL or its agent card's URL. Required.
	URL string `json:"url,omitempty"`
	// agentConnection: bearer_token, headers, request_timeout (providers_reach.go).
	agentConnection
	// CardTimeout bounds the wait for the agent card at load. Default 5s.
	CardTimeout caddy.Duration `json:"card_timeout,omitempty"`
	// GoneTimeout fails an execution whose agent stays unreachable this long. Default 2m.
	GoneTimeout caddy.Duration `json:"gone_timeout,omitempty"`
	// PollInterval is how often a task is polled when it is not streamed. Default 1s.
	PollInterval caddy.Duration `json:"poll_interval,omitempty"`

	agent *a2a.Agent
}

// CaddyModule returns the Caddy module information.
func (A2AProvider) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "harness.providers.a2a",
		New: func() caddy.Module { return new(A2AProvider) },
	}
}

// Provision resolves placeholders and reads the agent card (bounded by card_timeout; an agent
// that is down does not stop the config from loading: a stand-in manifest is served until the
// card arrives).
func (m *A2AProvider) Provision(ctx caddy.Context) error {
	repl := caddy.NewReplacer()
	cfg := a2a.Config{
		ID:           repl.ReplaceKnown(m.ID, ""),
		URL:          repl.ReplaceKnown(m.URL, ""),
		CardTimeout:  time.Duration(m.CardTimeout),
		GoneTimeout:  time.Duration(m.GoneTimeout),
		PollInterval: time.Duration(m.PollInterval),
	}
	cfg.BearerToken, cfg.Headers, cfg.RequestTimeout = m.agentConnection.resolved(repl)
	if cfg.ID == "" {
		cfg.ID = "a2a"
	}
	agent, err := a2a.New(cfg, executionLogger(ctx.Slogger()).With(slog.String("provider", "a2a")))
	if err != nil {
		return err
	}
	if err := agent.Start(ctx); err != nil {
		return err
	}
	m.agent = agent
	return nil
}

// Providers implements ProviderSet: always the one provider (with a stand-in manifest until the
// card is read), so that executions left running by a previous process can resume.
func (m *A2AProvider) Providers() []backend.Provider {
	return []backend.Provider{m.agent.Provider()}
}

// Watch implements ProviderSet: changed runs when the agent card arrives late.
func (m *A2AProvider) Watch(changed func()) { m.agent.Watch(changed) }

// Cleanup stops the background card retry. Running executions go on.
func (m *A2AProvider) Cleanup() error {
	if m.agent != nil {
		m.agent.Close()
	}
	return nil
}

// UnmarshalCaddyfile parses `a2a [<id>] { … }`; see the type's documentation.
func (m *A2AProvider) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	err := providerBlock(d, &m.ID, func(setting string) (bool, error) {
		switch setting {
		case "url":
			return true, stringArg(d, &m.URL)
		case "card_timeout":
			return true, durationSetting(d, setting, &m.CardTimeout)
		case "gone_timeout":
			return true, durationSetting(d, setting, &m.GoneTimeout)
		case "poll_interval":
			return true, durationSetting(d, setting, &m.PollInterval)
		}
		return m.agentConnection.unmarshalSetting(d, setting)
	})
	if err != nil {
		return err
	}
	if m.URL == "" {
		return d.Err("the a2a provider needs the agent's URL (url <base URL or agent-card URL>)")
	}
	return nil
}

// String names the module instance in errors.
func (m *A2AProvider) String() string {
	return fmt.Sprintf("a2a %s (agent %s)", m.ID, m.URL)
}

var (
	_ ProviderSet           = (*A2AProvider)(nil)
	_ caddy.Provisioner     = (*A2AProvider)(nil)
	_ caddy.CleanerUpper    = (*A2AProvider)(nil)
	_ caddyfile.Unmarshaler = (*A2AProvider)(nil)
)
