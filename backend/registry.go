package backend

import "github.com/harness-edge/harness-edge/sdk/api"

// The registry of providers: replaced as a whole (Caddy reloads), read by starts and by the
// runtime's description.

// SetProviders atomically replaces the registry (Caddy reloads call it); running executions keep
// the provider instance they started with. Duplicate id → *Error INVALID_STATE
// "Provider already registered: {id}"; invalid manifest → *Error VALIDATION_ERROR.
func (r *Runtime) SetProviders(ps []Provider) error {
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
	r.mu.Lock()
	r.providers, r.byID = regs, byID
	r.mu.Unlock()
	return nil
}

func (r *Runtime) provider(id string) (registeredProvider, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	reg, ok := r.byID[id]
	return reg, ok
}

// Describe returns the runtime identity and the manifests in registration order.
func (r *Runtime) Describe() api.RuntimeDescription {
	return api.RuntimeDescription{
		Name:            r.opts.Name,
		Version:         r.opts.Version,
		ProtocolVersion: api.RuntimeDescriptionProtocolVersionN20260902,
		Providers:       r.Capabilities(),
	}
}

// Capabilities returns copies of the registered manifests in registration order.
func (r *Runtime) Capabilities() []api.ProviderManifest {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]api.ProviderManifest, len(r.providers))
	for i, reg := range r.providers {
		out[i] = cloneManifest(reg.manifest)
	}
	return out
}
