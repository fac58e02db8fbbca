package backend

import (
	"context"
	"slices"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Durable state for providers, kept minimal: a per-execution checkpoint that commits atomically
// with the events it accounts for, and a small key/value namespace per provider id. Both are
// opaque bytes to the runtime. The remote provider keeps its relay position in the first (so an
// event relayed once is never relayed again after a crash) and its conversation mapping in the
// second. See docs/remote.md.

// Checkpoint is the checkpoint last committed for this execution by a previous process, when
// the execution is being resumed (see Resumer); nil otherwise. The caller may keep it.
func (r *Run) Checkpoint() []byte { return slices.Clone(r.x.resumedCheckpoint) }

// WithCheckpoint returns a view of r whose emissions (Emit, EmitText, EmitArtifact, OpenAction,
// RequestAction) commit checkpoint in the same store transaction as the event they append: after
// a crash, the stored checkpoint accounts for exactly the events that are stored. An emission
// that appends nothing (the execution is terminal) stores nothing either.
func (r *Run) WithCheckpoint(checkpoint []byte) *Run {
	view := *r
	view.checkpoint = slices.Clone(checkpoint)
	return &view
}

// SaveCheckpoint commits checkpoint on its own and returns once it is durable (for progress that
// emits nothing, e.g. the provider learnt the id of its remote work). Ignored once the execution
// is terminal.
func (r *Run) SaveCheckpoint(checkpoint []byte) error {
	x := r.x
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	if isTerminalState(x.state()) {
		return nil
	}
	return x.commit(change{at: now(), checkpoint: slices.Clone(checkpoint)})
}

// LoadState reads the value the execution's provider stored under key (SaveState); found is
// false when there is none. The namespace is the provider id the execution was started with.
func (r *Run) LoadState(key string) (value []byte, found bool, err error) {
	value, found, err = r.rt.store.ProviderState(providerStateKey(r.x.providerID, key))
	if err != nil {
		return nil, false, internalError("read provider state", err)
	}
	return value, found, nil
}

// SaveState durably stores value under key in the provider's namespace (see LoadState). It
// outlives executions; retention does not remove it.
func (r *Run) SaveState(key string, value []byte) error {
	rec := store.ProviderState{Key: providerStateKey(r.x.providerID, key), Value: slices.Clone(value)}
	if err := r.rt.store.Commit(&store.Batch{ProviderState: []store.ProviderState{rec}}); err != nil {
		return storeError("commit provider state", err)
	}
	return nil
}

// PendingAction is the action the execution waits on, if any: for a resumed execution that
// was awaiting an answer when the previous process stopped, the one to AwaitAction. An action
// answered before the provider asked (a client quick to answer after a restart) is still
// returned while its answer waits for AwaitAction: the provider must not ask a second time.
func (r *Run) PendingAction() (api.ActionRequest, bool) {
	x := r.x
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	p := x.pending
	if p == nil && x.opened != nil && len(x.opened.reply) > 0 {
		p = x.opened // answered, the answer not yet taken
	}
	if p == nil {
		return api.ActionRequest{}, false
	}
	req := p.request
	req.Payload = deepCopyObject(req.Payload)
	req.Description = clonePtr(req.Description)
	return req, true
}

// ResolveAction answers the pending action actionID on the provider's side, when the source of
// the request was answered elsewhere (remote: directly at the upstream). It is applied exactly
// as a caller's answer (action.responded, state running again, AwaitAction returns response),
// with the same errors when the action is no longer pending.
func (r *Run) ResolveAction(ctx context.Context, actionID string, response api.ActionResponse) error {
	_, err := r.rt.RespondToAction(ctx, r.x.id, actionID, func() (api.ActionResponse, error) {
		return response, nil
	})
	return err
}
