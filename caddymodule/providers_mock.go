package caddymodule

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
)

func init() {
	caddy.RegisterModule(MockProvider{})
}

// MockProvider is the deterministic mock provider (the reference's semantics: it echoes the
// input with a prefix, can ask for approval or input, and is tuned per execution through its
// config: prefix, delayMs, requireApproval, requestInput, artifactName).
//
// Caddyfile: provider mock [<id>]
type MockProvider struct {
	// Registers the provider under this id instead of "mock", e.g. to offer two instances.
	ID string `json:"id,omitempty"`
}

// CaddyModule returns the Caddy module information.
func (MockProvider) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "harness.providers.mock",
		New: func() caddy.Module { return new(MockProvider) },
	}
}

// Provider implements ProviderModule.
func (m *MockProvider) Provider() (backend.Provider, error) {
	return withID(mock.New(), m.ID), nil
}

// UnmarshalCaddyfile parses `mock [<id>]`; the mock has no settings of its own.
func (m *MockProvider) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the module name
	if d.NextArg() {
		m.ID = d.Val()
	}
	if d.NextArg() {
		return d.ArgErr()
	}
	if d.NextBlock(0) {
		return d.Errf("the mock provider has no settings; unexpected %q", d.Val())
	}
	return nil
}

var (
	_ ProviderModule        = (*MockProvider)(nil)
	_ caddyfile.Unmarshaler = (*MockProvider)(nil)
)
