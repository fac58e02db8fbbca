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

// ProviderSet is what a guest module implements instead of ProviderModule when it yields any
// number of providers, and the number or their manifests can change while its config runs
// (harness.providers.remote: one per upstream provider, known once the upstream answers).
type ProviderSet interface {
	caddy.Module
	// Providers returns the providers to register now, in order.
	Providers() []backend.Provider
	// Watch registers changed, called (on any goroutine) whenever Providers has a new answer.
	Watch(changed func())
}

// providerList is the configured providers in configuration order: fixed ones and sets.
type providerList struct {
	parts []func() []backend.Provider
	sets  []ProviderSet
}

// current is the providers to register now.
func (l providerList) current() []backend.Provider {
	var out []backend.Provider
	for _, part := range l.parts {
		out = append(out, part()...)
	}
	return out
}

// loadProviders provisions the configured provider modules and builds their providers, in
// configuration order. With none configured, the mock provider is registered alone, so that a
// bare `harness` directive gives a working endpoint (as the reference server does).
func (h *Harness) loadProviders(ctx caddy.Context) (providerList, error) {
	if len(h.ProvidersRaw) == 0 {
		fixed := []backend.Provider{mock.New()}
		return providerList{parts: []func() []backend.Provider{func() []backend.Provider { return fixed }}}, nil
	}
	mods, err := ctx.LoadModule(h, "ProvidersRaw")
	if err != nil {
		return providerList{}, fmt.Errorf("loading providers: %w", err)
	}
	var list providerList
	for i, mod := range mods.([]any) {
		if set, ok := mod.(ProviderSet); ok {
			list.parts = append(list.parts, set.Providers)
			list.sets = append(list.sets, set)
			continue
		}
		pm, ok := mod.(ProviderModule)
		if !ok {
			return providerList{}, fmt.Errorf("providers[%d]: module %T does not implement caddymodule.ProviderModule", i, mod)
		}
		p, err := pm.Provider()
		if err != nil {
			return providerList{}, fmt.Errorf("providers[%d] (%s): %w", i, pm.CaddyModule().ID, err)
		}
		fixed := []backend.Provider{p}
		list.parts = append(list.parts, func() []backend.Provider { return fixed })
	}
	return list, nil
}

// watchProviders registers h's providers again whenever a provider set changes.
func (h *Harness) watchProviders(list providerList) {
	for _, set := range list.sets {
		set.Watch(func() {
			h.mu.Lock()
			shared := h.shared
			h.mu.Unlock()
			if shared != nil {
				shared.replace(h, list.current())
			}
		})
	}
}

// withID registers p under another id, so one provider can be configured several times (two mock
// instances, or one adapter per agent). A Canceler stays a Canceler: the runtime decides from the
// interface whether a provider has a cleanup hook.
func withID(p backend.Provider, id string) backend.Provider {
	if id == "" || id == p.Manifest().ID {
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
	m.ID = r.id
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
