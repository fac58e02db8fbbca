package caddymodule

import (
	"context"
	"fmt"

	"github.com/caddyserver/caddy/v2"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// ProviderModule is what a guest module in the namespace harness.providers implements: it turns
// its configuration into a backend provider. Caddy provisions the module first (if it implements
// caddy.Provisioner), so Provider can rely on resolved settings.
type ProviderModule interface {
	caddy.Module
	// Provider builds the backend provider; its manifest id is the instance id given in config
	// (e.g. "claude"), defaulting to the provider's own.
	Provider() (backend.Provider, error)
}

// loadProviders provisions the configured provider modules and builds their providers, in
// configuration order. With none configured, the mock provider is registered alone, so that a
// bare `harness` directive gives a working endpoint (as the reference server does).
func (h *Harness) loadProviders(ctx caddy.Context) ([]backend.Provider, error) {
	if len(h.ProvidersRaw) == 0 {
		return []backend.Provider{mock.New()}, nil
	}
	mods, err := ctx.LoadModule(h, "ProvidersRaw")
	if err != nil {
		return nil, fmt.Errorf("loading providers: %w", err)
	}
	var providers []backend.Provider
	for i, mod := range mods.([]any) {
		pm, ok := mod.(ProviderModule)
		if !ok {
			return nil, fmt.Errorf("providers[%d]: module %T does not implement caddymodule.ProviderModule", i, mod)
		}
		p, err := pm.Provider()
		if err != nil {
			return nil, fmt.Errorf("providers[%d] (%s): %w", i, pm.CaddyModule().ID, err)
		}
		providers = append(providers, p)
	}
	return providers, nil
}

// withID registers p under another id, so one provider can be configured several times (two mock
// instances, or one adapter per agent). A Canceler stays a Canceler: the runtime decides from the
// interface whether a provider has a cleanup hook.
func withID(p backend.Provider, id string) backend.Provider {
	if id == "" || id == p.Manifest().Id {
		return p
	}
	renamed := renamedProvider{inner: p, id: id}
	if c, ok := p.(backend.Canceler); ok {
		return renamedCanceler{renamedProvider: renamed, canceler: c}
	}
	return renamed
}

type renamedProvider struct {
	inner backend.Provider
	id    string
}

func (r renamedProvider) Manifest() api.ProviderManifest {
	m := r.inner.Manifest()
	m.Id = r.id
	return m
}

func (r renamedProvider) Run(ctx context.Context, run *backend.Run) (backend.Result, error) {
	return r.inner.Run(ctx, run)
}

type renamedCanceler struct {
	renamedProvider
	canceler backend.Canceler
}

func (r renamedCanceler) Cancel(ctx context.Context, executionID, reason string) error {
	return r.canceler.Cancel(ctx, executionID, reason)
}

var (
	_ backend.Provider = renamedProvider{}
	_ backend.Canceler = renamedCanceler{}
)
