package remote

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"sync"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Provider serves one upstream provider under a local id. It implements backend.Provider,
// backend.Canceler and backend.Resumer.
type Provider struct {
	up         *Upstream
	id         string // local id
	upstreamID string

	mu      sync.Mutex
	running map[string]*relayEntry // local execution id → its relay
}

var (
	_ backend.Provider = (*Provider)(nil)
	_ backend.Canceler = (*Provider)(nil)
	_ backend.Resumer  = (*Provider)(nil)
)

// Manifest is the upstream's manifest under the local id, with topology remote. Until the
// upstream has answered it is a stand-in that declares no capability (so a start that requires
// any fails its preflight rather than being promised something unknown) and says so in its
// metadata; the provider is registered again with the real manifest as soon as it is read
// (Upstream.Watch). Executions started meanwhile go to the upstream all the same.
func (p *Provider) Manifest() api.ProviderManifest {
	m, ok := p.up.manifest(p.upstreamID)
	if !ok {
		metadata := api.JSONObject{"upstream": p.up.s.label, "upstreamProvider": p.upstreamID, "upstreamManifest": "not read yet"}
		return api.ProviderManifest{
			ID:              p.id,
			Name:            "Remote provider " + p.upstreamID + " (upstream manifest not read yet)",
			Version:         "0.0.0",
			ProtocolVersion: api.ProviderManifestProtocolVersionN20260902,
			Topologies:      []api.RuntimeTopology{api.RuntimeTopologyRemote},
			Capabilities:    map[string]api.SupportLevel{},
			Metadata:        &metadata,
		}
	}
	m.ID = p.id
	m.Topologies = []api.RuntimeTopology{api.RuntimeTopologyRemote}
	m.Capabilities = maps.Clone(m.Capabilities)
	metadata := api.JSONObject{}
	if m.Metadata != nil {
		metadata = maps.Clone(*m.Metadata)
	}
	metadata["upstream"] = p.up.s.label
	metadata["upstreamProvider"] = p.upstreamID
	m.Metadata = &metadata
	return m
}

// Run starts the upstream execution (or finds it again, by its idempotency key) and relays it.
func (p *Provider) Run(ctx context.Context, run *backend.Run) (backend.Result, error) {
	e, ok := p.register(run.ExecutionID())
	if !ok {
		return backend.Result{}, errors.New("Remote execution is already running")
	}
	defer p.unregister(ctx, run.ExecutionID(), e)
	// The runtime cancels ctx before it calls Cancel: registering first and checking after
	// means a Cancel that found no entry is always followed by this check.
	if ctx.Err() != nil {
		e.started(checkpoint{})
		return backend.Result{}, ctx.Err()
	}
	cp, err := p.startUpstream(ctx, run)
	e.started(cp)
	if err != nil {
		return backend.Result{}, err
	}
	return p.relay(ctx, run, e, cp)
}

// Resume continues an execution after an edge restart from its last checkpoint: the upstream
// execution lived on, and relaying goes on after the last upstream sequence relayed.
func (p *Provider) Resume(ctx context.Context, run *backend.Run) (backend.Result, error) {
	raw := run.Checkpoint()
	if raw == nil {
		// Stopped before the upstream execution was recorded: start it again; its idempotency
		// key finds it if it had been created.
		return p.Run(ctx, run)
	}
	var cp checkpoint
	if err := json.Unmarshal(raw, &cp); err != nil || cp.UpstreamExecutionID == "" {
		return backend.Result{}, backend.ErrNotResumable
	}
	e, ok := p.register(run.ExecutionID())
	if !ok {
		return backend.Result{}, errors.New("Remote execution is already running")
	}
	defer p.unregister(ctx, run.ExecutionID(), e)
	e.started(cp)
	if ctx.Err() != nil {
		// Resumed to be cancelled (the edge stopped while cancelling it): the entry is all
		// Cancel needs to cancel the upstream execution.
		return backend.Result{}, ctx.Err()
	}
	return p.relay(ctx, run, e, cp)
}

// Cancel is the runtime's cleanup hook: it cancels the upstream execution and waits for it to
// end there, bounded by ctx (the runtime's cancel timeout). Its error becomes
// providerCleanupError.
func (p *Provider) Cancel(ctx context.Context, executionID string, reason string) error {
	p.mu.Lock()
	e := p.running[executionID]
	delete(p.running, executionID)
	p.mu.Unlock()
	if e == nil {
		return nil // never started here: nothing upstream
	}
	var cp checkpoint
	select {
	case <-e.startDone:
		cp = e.cp
	case <-ctx.Done():
		return errors.New(p.upstreamMessage("cancel", ctx.Err()))
	}
	if cp.UpstreamExecutionID == "" {
		return nil // the upstream execution was never created
	}
	req := api.CancelExecutionRequest{}
	if reason != "" {
		req.Reason = &reason
	}
	exec, err := p.up.client.CancelExecution(ctx, cp.UpstreamExecutionID, req)
	if err != nil {
		return errors.New(p.upstreamMessage("cancel", err))
	}
	if !sdk.IsTerminalState(exec.State) {
		return errors.New("Upstream " + p.up.s.label + " did not confirm the cancellation")
	}
	return nil
}

// relayEntry is a running relay, for Cancel.
type relayEntry struct {
	startDone chan struct{} // closed once cp holds the upstream execution (or never will)
	cp        checkpoint
	once      sync.Once
}

func (e *relayEntry) started(cp checkpoint) {
	e.once.Do(func() {
		e.cp = cp
		close(e.startDone)
	})
}

func (p *Provider) register(id string) (*relayEntry, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, running := p.running[id]; running {
		return nil, false
	}
	e := &relayEntry{startDone: make(chan struct{})}
	p.running[id] = e
	return e, true
}

// unregister forgets a relay that ended, unless its context was cancelled: then the runtime's
// Cancel hook follows (it runs after the context ends) and needs the entry; it removes it.
func (p *Provider) unregister(ctx context.Context, id string, e *relayEntry) {
	if ctx.Err() != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running[id] == e {
		delete(p.running, id)
	}
}
