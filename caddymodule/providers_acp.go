package caddymodule

import (
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
// ACP bridges) as a subprocess per execution. Configure it once per agent, each with its own id.
//
// The agent gets only the environment listed in env. Values may use Caddy's runtime placeholders,
// resolved when the config loads, so secrets stay out of the config JSON:
//
//	provider acp claude {
//		command npx
//		args    -y @zed-industries/claude-code-acp
//		env     ANTHROPIC_API_KEY {env.ANTHROPIC_API_KEY}
//		env     PATH {env.PATH}
//		cwd     /srv/agents/claude
//	}
type ACPProvider struct {
	// The JSON fields are the adapter's own (id, command, args, cwd, env,
	// initialization_timeout, run_timeout, shutdown_grace, max_message_bytes,
	// max_pending_permissions); see package acp.
	acp.Config
}

// CaddyModule returns the Caddy module information.
func (ACPProvider) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "harness.providers.acp",
		New: func() caddy.Module { return new(ACPProvider) },
	}
}

// Provider implements ProviderModule: it resolves placeholders ({env.NAME}, {file./path}) in the
// command, args, cwd and env values, then builds the adapter.
func (a *ACPProvider) Provider() (backend.Provider, error) {
	repl := caddy.NewReplacer()
	cfg := a.Config
	cfg.Command = repl.ReplaceKnown(cfg.Command, "")
	cfg.Cwd = repl.ReplaceKnown(cfg.Cwd, "")
	cfg.Args = make([]string, len(a.Args))
	for i, arg := range a.Args {
		cfg.Args[i] = repl.ReplaceKnown(arg, "")
	}
	cfg.Env = replacedValues(repl, a.Env)
	return acp.New(cfg)
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
	_ ProviderModule        = (*ACPProvider)(nil)
	_ caddyfile.Unmarshaler = (*ACPProvider)(nil)
)
