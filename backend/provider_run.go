package backend

import (
	"context"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// What a provider does through its Run: emit events, artifacts and action requests, and wait
// for an action's response. Each is an operation of the execution (emit.go, artifacts.go,
// actions.go).

// Emit appends output.text.delta, artifact.created or provider.event; anything else returns
// "Provider emitted a reserved or unknown event type". Data must be a JSON object (finite
// numbers), a text delta needs a string "text", an artifact a valid descriptor with an id not yet
// used in this execution (docs/protocol.md §4.4, §9); refused emissions append nothing and
// return a *Error whose message fails the execution if the provider returns it. Emit returns nil
// without appending once the execution is terminal.
//
// Emit validates synchronously, assigns the event its sequence and queues it for the store's
// next group commit, then returns without waiting for the disk (it waits only when the commit
// queue is full). The event becomes visible to readers and subscribers once it is durable, so
// nothing a caller observes is ever lost to a crash; an emission that could not be committed
// cancels ctx and fails the next Emit (and every later change of the execution) with
// INTERNAL_ERROR; the runtime then fails the execution itself (see stranded.go). An emission
// that would take the execution past Options.MaxEventsPerExecution or
// MaxEventBytesPerExecution is refused with PROVIDER_ERROR naming the limit, and fails the
// execution and cancels ctx at once.
func (r *Run) Emit(eventType api.StandardEventType, data api.JSONObject) error {
	return r.x.emit(r.checkpoint, eventType, data)
}

// EmitText appends output.text.delta {text}.
func (r *Run) EmitText(text string) error {
	return r.x.appendProviderEvent(r.checkpoint, textEvent(api.StandardEventTypeOutputTextDelta, text))
}

// EmitArtifact appends artifact.created with the stored Artifact as its data.
func (r *Run) EmitArtifact(a api.CreateArtifactInput) error {
	return r.x.emitArtifact(r.checkpoint, a)
}

// RequestAction asks the caller and blocks until answered, or fails when the execution is
// cancelled/failed ("Execution aborted") or ctx ends. One pending action at a time (§7.1): a
// second request while one is pending fails with INVALID_STATE.
func (r *Run) RequestAction(ctx context.Context, a ActionInput) (api.ActionResponse, error) {
	req, err := r.OpenAction(a)
	if err != nil {
		return api.ActionResponse{}, err
	}
	return r.AwaitAction(ctx, req.ID)
}

// OpenAction is the first half of RequestAction: it records the action and appends
// action.required, and returns the request (its id included) without waiting for the answer;
// AwaitAction waits. A provider that must keep working while the caller decides (remote: it
// keeps reading its upstream's events) uses the two halves.
//
// A standing rule that matches the action answers it in the same commit (docs/protocol.md,
// "Standing rules"): AwaitAction then returns the rule's answer at once.
func (r *Run) OpenAction(a ActionInput) (api.ActionRequest, error) {
	p, err := r.x.openAction(r.checkpoint, a, r.x.standingRule(a))
	if err != nil {
		return api.ActionRequest{}, err
	}
	return p.request, nil
}

// AwaitAction waits for the answer to the pending action actionID (opened by OpenAction, or
// PendingAction of a resumed execution), with RequestAction's outcomes. An id that is not the
// pending one fails at once with ACTION_NOT_FOUND.
func (r *Run) AwaitAction(ctx context.Context, actionID string) (api.ActionResponse, error) {
	return r.x.awaitAction(ctx, actionID)
}
