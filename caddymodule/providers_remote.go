package caddymodule

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/providers/remote"
)

func init() {
	caddy.RegisterModule(RemoteProvider{})
}

// RemoteProvider serves the providers of an upstream Harness Runtime API server (the edge in
// front of another runtime; see docs/remote.md):
//
//	provider remote [<id>] {
//		upstream              <url>
//		upstream_provider     <id>        # default: the id above; neither: every upstream provider
//		bearer_token          <token>
//		header                <name> <value>
//		ca_file               <path>
//		manifest_timeout      <duration>
//		request_timeout       <duration>
//		upstream_gone_timeout <duration>
//	}
//
// Values may use Caddy's placeholders ({env.UPSTREAM_TOKEN}), resolved when the config loads.
type RemoteProvider struct {
	// ID is the local id of the upstream provider (default: upstream_provider).
	ID string `json:"id,omitempty"`
	// Upstream is the upstream's base URL. Required.
	Upstream string `json:"upstream,omitempty"`
	// UpstreamProvider is the upstream provider to serve (default: id). With neither, every
	// provider the upstream lists is served under its own id.
	UpstreamProvider string `json:"upstream_provider,omitempty"`
	// agentConnection: bearer_token, headers, request_timeout (providers_reach.go).
	agentConnection
	// CAFile is a PEM file of CAs trusted for the upstream's certificate (besides the system's).
	CAFile string `json:"ca_file,omitempty"`
	// ManifestTimeout bounds the wait for the upstream's manifests at load. Default 5s.
	ManifestTimeout caddy.Duration `json:"manifest_timeout,omitempty"`
	// UpstreamGoneTimeout fails an execution whose upstream stays unreachable this long.
	// Default 2m.
	UpstreamGoneTimeout caddy.Duration `json:"upstream_gone_timeout,omitempty"`

	up *remote.Upstream
}

// CaddyModule returns the Caddy module information.
func (RemoteProvider) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "harness.providers.remote",
		New: func() caddy.Module { return new(RemoteProvider) },
	}
}

// Provision resolves placeholders and reads the upstream's manifests (bounded by
// manifest_timeout; an upstream that is down does not stop the config from loading).
func (m *RemoteProvider) Provision(ctx caddy.Context) error {
	repl := caddy.NewReplacer()
	cfg := remote.Config{
		UpstreamURL:      repl.ReplaceKnown(m.Upstream, ""),
		UpstreamProvider: repl.ReplaceKnown(m.UpstreamProvider, ""),
		ID:               repl.ReplaceKnown(m.ID, ""),
		CAFile:           repl.ReplaceKnown(m.CAFile, ""),
		ManifestTimeout:  time.Duration(m.ManifestTimeout),
		GoneTimeout:      time.Duration(m.UpstreamGoneTimeout),
	}
	cfg.BearerToken, cfg.Headers, cfg.RequestTimeout = m.agentConnection.resolved(repl)
	if cfg.UpstreamProvider == "" {
		cfg.UpstreamProvider = cfg.ID
	}
	up, err := remote.New(cfg, executionLogger(ctx.Slogger()).With(slog.String("provider", "remote")))
	if err != nil {
		return err
	}
	if err := up.Start(ctx); err != nil {
		return err
	}
	m.up = up
	return nil
}

// Providers implements ProviderSet.
func (m *RemoteProvider) Providers() []backend.Provider { return m.up.Providers() }

// Watch implements ProviderSet: changed runs when the upstream's manifests arrive late.
func (m *RemoteProvider) Watch(changed func()) { m.up.Watch(changed) }

// Cleanup stops the background manifest retry. Executions relaying go on (as executions keep
// running across a reload).
func (m *RemoteProvider) Cleanup() error {
	if m.up != nil {
		m.up.Close()
	}
	return nil
}

// UnmarshalCaddyfile parses `remote [<id>] { … }`; see the type's documentation.
func (m *RemoteProvider) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	err := providerBlock(d, &m.ID, func(setting string) (bool, error) {
		switch setting {
		case "upstream":
			return true, stringArg(d, &m.Upstream)
		case "upstream_provider":
			return true, stringArg(d, &m.UpstreamProvider)
		case "ca_file":
			return true, stringArg(d, &m.CAFile)
		case "manifest_timeout":
			return true, durationSetting(d, setting, &m.ManifestTimeout)
		case "upstream_gone_timeout":
			return true, durationSetting(d, setting, &m.UpstreamGoneTimeout)
		}
		return m.agentConnection.unmarshalSetting(d, setting)
	})
	if err != nil {
		return err
	}
	if m.Upstream == "" {
		return d.Err("the remote provider needs an upstream URL (upstream <url>)")
	}
	return nil
}

// String names the module instance in errors.
func (m *RemoteProvider) String() string {
	return fmt.Sprintf("remote %s (upstream %s)", m.ID, m.Upstream)
}

var (
	_ ProviderSet           = (*RemoteProvider)(nil)
	_ caddy.Provisioner     = (*RemoteProvider)(nil)
	_ caddy.CleanerUpper    = (*RemoteProvider)(nil)
	_ caddyfile.Unmarshaler = (*RemoteProvider)(nil)
)
