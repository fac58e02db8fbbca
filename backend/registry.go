package backend

import (
	"sync"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// providerRegistry is the runtime's providers: replaced as a whole (Caddy reloads), read by
// starts, resumptions, standing rules, retention and the runtime's description. The Runtime
// embeds it, so SetProviders, Describe and Capabilities are the runtime's own API.
type providerRegistry struct {
	name, version string // the runtime's (Options.Name, Options.Version), for Describe

	mu        sync.RWMutex
	providers []registeredProvider // registration order
	byID      map[string]registeredProvider
}

type registeredProvider struct {
	provider Provider
	manifest api.ProviderManifest // validated private copy, read once at registration
}

func newProviderRegistry(name, version string) *providerRegistry {
	return &providerRegistry{name: name, version: version}
}

// SetProviders atomically replaces the registry (Caddy reloads call it); running executions keep
// the provider instance they started with. Duplicate id → *Error INVALID_STATE
// "Provider already registered: {id}"; invalid manifest → *Error VALIDATION_ERROR.
func (g *providerRegistry) SetProviders(ps []Provider) error {
	// Manifests are read before taking the lock: provider code never runs under a runtime lock.
	regs := make([]registeredProvider, 0, len(ps))
	byID := make(map[string]registeredProvider, len(ps))
	for i, p := range ps {
		if p == nil {
			return newError(CodeValidation, "Provider %d is nil", i)
		}
		m := cloneManifest(p.Manifest())
		if err := validateManifest(m); err != nil {
			return err
		}
		if _, dup := byID[m.ID]; dup {
			return newError(CodeInvalidState, "Provider already registered: %s", m.ID)
		}
		reg := registeredProvider{provider: p, manifest: m}
		regs = append(regs, reg)
		byID[m.ID] = reg
	}
	g.mu.Lock()
	g.providers, g.byID = regs, byID
	g.mu.Unlock()
	return nil
}

// provider is the registered provider id, if any.
func (g *providerRegistry) provider(id string) (registeredProvider, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	reg, ok := g.byID[id]
	return reg, ok
}

// hasProvider reports whether a provider id is registered (a rule that names another is a
// mistake).
func (g *providerRegistry) hasProvider(id string) bool {
	_, ok := g.provider(id)
	return ok
}

// registered is the providers in registration order (the registry replaces its slice whole, so
// the caller may range over it without the lock).
func (g *providerRegistry) registered() []registeredProvider {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.providers
}

// conversationForgetters are the registered providers that keep conversation state
// (ConversationForgetter), in registration order.
func (g *providerRegistry) conversationForgetters() []conversationForgetter {
	var out []conversationForgetter
	for _, reg := range g.registered() {
		if f, ok := reg.provider.(ConversationForgetter); ok {
			out = append(out, conversationForgetter{reg.manifest.ID, f})
		}
	}
	return out
}

// Describe returns the runtime identity and the manifests in registration order.
func (g *providerRegistry) Describe() api.RuntimeDescription {
	return api.RuntimeDescription{
		Name:            g.name,
		Version:         g.version,
		ProtocolVersion: api.RuntimeDescriptionProtocolVersionN20260902,
		Providers:       g.Capabilities(),
	}
}

// Capabilities returns copies of the registered manifests in registration order.
func (g *providerRegistry) Capabilities() []api.ProviderManifest {
	regs := g.registered()
	out := make([]api.ProviderManifest, len(regs))
	for i, reg := range regs {
		out[i] = cloneManifest(reg.manifest)
	}
	return out
}
