package caddymodule

import (
	"fmt"
	"log/slog"
	"math"
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/providers/acp"
)

func init() {
	caddy.RegisterModule(ACPProvider{})
}

// ACPProvider runs an Agent Client Protocol agent (Claude Code, Gemini CLI, Codex through their
// ACP bridges) as subprocesses: a conversation's executions are turns of one native ACP session,
// its process kept warm between them and the session continued in a new process when the agent
// can (docs/acp.md). Configure it once per agent, each with its own id.
//
// The agent gets only the environment listed in env. Values may use Caddy's runtime placeholders,
// resolved when the config loads, so secrets stay out of the config JSON:
//
//	provider acp claude {
//		command           npx
//		args              -y @zed-industries/claude-code-acp
//		env               ANTHROPIC_API_KEY {env.ANTHROPIC_API_KEY}
//		env               PATH {env.PATH}
//		conversation_root /srv/agents/claude/conversations
//		idle_timeout      10m
//		max_processes     8
//	}
//
// At provision the agent is started once to ask initialize whether it can continue a session
// (the manifest's conversation.continuity); see Provision.
type ACPProvider struct {
	// The JSON fields are the adapter's own (id, command, args, cwd, conversation_root, env,
	// initialization_timeout, run_timeout, shutdown_grace, max_message_bytes,
	// max_pending_permissions, idle_timeout, max_processes); see package acp.
	acp.Config

	provider *acp.Provider
}

// CaddyModule returns the Caddy module information.
func (ACPProvider) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "harness.providers.acp",
		New: func() caddy.Module { return new(ACPProvider) },
	}
}

// Provision resolves placeholders ({env.NAME}, {file./path}) in the command, args, cwd,
// conversation_root and env values, builds the adapter and probes the agent: it is started once
// and asked initialize, so that the manifest says whether it can continue a session. The wait is
// bounded (the initialization timeout, at most 10s); an agent that does not answer in time (not
// installed yet, a first npx download) does not stop the config from loading: continuity is
// declared unsupported until it answers, and the probe goes on in the background. An agent that
// answers with another ACP protocol version can never serve an execution: that is an error. The
// probe's process is gone before Provision returns, so `caddy validate` leaves nothing behind.
// Before the probe, a conversation_root is made the server's user's alone (created 0700, or
// tightened to 0700); one owned by another user is an error naming it and its owner, so validate
// such a config as the server's user.
func (a *ACPProvider) Provision(ctx caddy.Context) error {
	repl := caddy.NewReplacer()
	cfg := a.Config
	cfg.Command = repl.ReplaceKnown(cfg.Command, "")
	cfg.Cwd = repl.ReplaceKnown(cfg.Cwd, "")
	cfg.ConversationRoot = repl.ReplaceKnown(cfg.ConversationRoot, "")
	cfg.Args = make([]string, len(a.Args))
	for i, arg := range a.Args {
		cfg.Args[i] = repl.ReplaceKnown(arg, "")
	}
	cfg.Env = replacedValues(repl, a.Env)
	p, err := acp.New(cfg)
	if err != nil {
		return err
	}
	id := cfg.ID
	if id == "" {
		id = acp.DefaultID
	}
	if err := p.Start(ctx, executionLogger(ctx.Slogger()).With(slog.String("provider", id))); err != nil {
		p.Close()
		return fmt.Errorf("acp provider %s: %w", id, err)
	}
	a.provider = p
	return nil
}

// Providers implements ProviderSet: always the one provider, whose manifest changes once when a
// probe that did not answer at provision answers later.
func (a *ACPProvider) Providers() []backend.Provider { return []backend.Provider{a.provider} }

// Watch implements ProviderSet: changed runs when the probe answers after Provision.
func (a *ACPProvider) Watch(changed func()) { a.provider.Watch(changed) }

// Cleanup stops the background probe and ends the warm agent processes (a reload starts a new
// pool; busy processes end with their turn). Running executions go on.
func (a *ACPProvider) Cleanup() error {
	if a.provider != nil {
		a.provider.Close()
	}
	return nil
}

// UnmarshalCaddyfile parses `acp [<id>] { … }`; see the type's documentation.
func (a *ACPProvider) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return providerBlock(d, &a.ID, func(setting string) (bool, error) {
		switch setting {
		case "command":
			return true, stringArg(d, &a.Command)
		case "args":
			args := d.RemainingArgs()
			if len(args) == 0 {
				return true, d.ArgErr()
			}
			a.Args = append(a.Args, args...)
		case "cwd":
			return true, stringArg(d, &a.Cwd)
		case "conversation_root":
			return true, stringArg(d, &a.ConversationRoot)
		case "idle_timeout":
			return true, durationSetting(d, setting, &a.IdleTimeout)
		case "max_processes":
			n, err := countArg(d, setting)
			a.MaxProcesses = n
			return true, err
		case "env":
			return true, namedValueArg(d, setting, &a.Env)
		case "initialization_timeout":
			return true, durationSetting(d, setting, &a.InitializationTimeout)
		case "run_timeout":
			return true, durationSetting(d, setting, &a.RunTimeout)
		case "shutdown_grace":
			return true, durationSetting(d, setting, &a.ShutdownGrace)
		case "max_message_bytes":
			size, err := sizeArg(d, setting, math.MaxInt32)
			a.MaxMessageBytes = int(size)
			return true, err
		case "max_pending_permissions":
			var raw string
			if !d.AllArgs(&raw) {
				return true, d.ArgErr()
			}
			n, err := strconv.Atoi(raw)
			if err != nil {
				return true, d.Errf("max_pending_permissions: %v", err)
			}
			a.MaxPendingPermissions = n
		default:
			return false, nil
		}
		return true, nil
	})
}

var (
	_ ProviderSet           = (*ACPProvider)(nil)
	_ caddy.Provisioner     = (*ACPProvider)(nil)
	_ caddy.CleanerUpper    = (*ACPProvider)(nil)
	_ caddyfile.Unmarshaler = (*ACPProvider)(nil)
)
