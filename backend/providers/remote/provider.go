package remote

import (
	"context"
	"encoding/json"
	"errors"
	"maps"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/providers/internal/running"
	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Provider serves one upstream provider under a local id. It implements backend.Provider,
// backend.Canceler and backend.Resumer.
type Provider struct {
	up         *Upstream
	id         string // local id
	upstreamID string

	running running.Table[checkpoint] // local execution id → its upstream execution, for Cancel
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
	e, ok := p.running.Register(run.ExecutionID())
	if !ok {
		return backend.Result{}, errors.New("Remote execution is already running")
	}
	defer p.running.Unregister(ctx, run.ExecutionID(), e)
	// The runtime cancels ctx before it calls Cancel: registering first and checking after
	// means a Cancel that found no entry is always followed by this check.
	if ctx.Err() != nil {
		e.Started(checkpoint{})
		return backend.Result{}, ctx.Err()
	}
	cp, err := p.startUpstream(ctx, run)
	e.Started(cp)
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
	e, ok := p.running.Register(run.ExecutionID())
	if !ok {
		return backend.Result{}, errors.New("Remote execution is already running")
	}
	defer p.running.Unregister(ctx, run.ExecutionID(), e)
	e.Started(cp)
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
	e := p.running.Take(executionID)
	if e == nil {
		return nil // never started here: nothing upstream
	}
	var cp checkpoint
	select {
	case <-e.Known():
		cp = e.Value()
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
