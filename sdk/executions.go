package sdk

import (
	"context"
	"crypto/rand"
	"errors"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// StartExecution starts an execution (POST /v1/executions) and returns its snapshot, normally in
// state queued.
//
// The request always carries an idempotency key: req.IdempotencyKey if set, otherwise one
// generated for this call and reused by each of its retries. So a start whose answer was lost
// (a dropped connection, a 5xx from a gateway, a body cut short, a silent server) is retried
// and answers the same execution; there is never a second one. Set your own key (stable across
// process restarts, e.g. derived from your job id) to make a start safe to repeat across calls
// too; the key is scoped to the conversation. Pass Replayed to learn whether the execution was
// started by an earlier call with that key.
func (c *Client) StartExecution(ctx context.Context, req api.StartExecutionRequest, opts ...StartOption) (api.Execution, error) {
	var o startOptions
	for _, opt := range opts {
		opt(&o)
	}
	ownKey := req.IdempotencyKey != nil
	if !ownKey {
		req.IdempotencyKey = ptr(newIdempotencyKey())
	}
	resp, err := c.api.StartExecutionWithResponse(ctx, req)
	if err != nil {
		return api.Execution{}, transportError("startExecution", err)
	}
	exec, err := result(resp.HTTPResponse, resp.Body, resp.JSON202)
	if o.replayed != nil {
		// A key this call generated can only have been used by its own tries: whatever the
		// header says, this call started the execution.
		*o.replayed = err == nil && ownKey && resp.HTTPResponse.Header.Get(idempotentReplayedHeader) == "true"
	}
	return exec, err
}

// idempotentReplayedHeader is set to "true" on a start answered from an earlier request with
// the same idempotency key.
const idempotentReplayedHeader = "Idempotent-Replayed"

// A StartOption asks StartExecution for more than the execution.
type StartOption func(*startOptions)

type startOptions struct {
	replayed *bool
}

// Replayed makes StartExecution set *into to whether the server answered with an execution
// that an earlier call with the same idempotency key had started (header
// Idempotent-Replayed: true), rather than starting one for this call. It is false when the
// call fails and always false without req.IdempotencyKey, since the key the call generates is
// its own. With your own key there is one case the server cannot tell apart: when a try of
// this call was applied but its answer lost, the retry is answered as a replay and *into is
// true, although no earlier call started it.
func Replayed(into *bool) StartOption {
	return func(o *startOptions) { o.replayed = into }
}

// newIdempotencyKey returns a fresh random key (26 base32 characters after the prefix).
func newIdempotencyKey() string {
	return "go-sdk-" + rand.Text()
}

// GetExecution reads an execution's current snapshot (GET /v1/executions/{id}). Like every
// read it is retried after connection errors, cut or silent answers, 408, 429 and 5xx (see
// "Retries and timeouts" in the package documentation).
func (c *Client) GetExecution(ctx context.Context, id string) (api.Execution, error) {
	resp, err := c.api.GetExecutionWithResponse(ctx, id)
	if err != nil {
		return api.Execution{}, transportError("getExecution", err)
	}
	return result(resp.HTTPResponse, resp.Body, resp.JSON200)
}

// ListArtifacts lists an execution's artifacts in creation order
// (GET /v1/executions/{id}/artifacts). It is retried like GetExecution.
func (c *Client) ListArtifacts(ctx context.Context, id string) ([]api.Artifact, error) {
	resp, err := c.api.ListArtifactsWithResponse(ctx, id)
	if err != nil {
		return nil, transportError("listArtifacts", err)
	}
	list, err := result(resp.HTTPResponse, resp.Body, resp.JSON200)
	return list.Artifacts, err
}

// CancelExecution cancels an execution (POST /v1/executions/{id}:cancel) and returns it once
// it is final. req.Reason (1–500 characters) is recorded in the run.cancelled event. On an
// execution that is already terminal it changes nothing and returns the snapshot. Cancelling
// is idempotent on the server, so it is retried like a read. The server answers once the
// provider has cleaned up (bounded by its cancel timeout, 30 s by default); a stall timeout
// (WithStallTimeout) shorter than that abandons the wait and tries again.
func (c *Client) CancelExecution(ctx context.Context, id string, req api.CancelExecutionRequest) (api.Execution, error) {
	resp, err := c.api.CancelExecutionWithResponse(ctx, id, req)
	if err != nil {
		return api.Execution{}, transportError("cancelExecution", err)
	}
	return result(resp.HTTPResponse, resp.Body, resp.JSON200)
}

// RespondToAction answers an approval or input request
// (POST /v1/executions/{id}/actions/{actionId}:respond); actionID is the id in the
// action.required event's data. It returns the execution, running again.
//
// It is retried like the other operations (a body cut short or a silent answer included). If
// a retry meets ACTION_ALREADY_RESOLVED, an earlier try of this same call may have been applied
// before its answer was lost, so the call counts as a success and returns the execution's
// current snapshot, read like GetExecution. (The protocol does not say
// who resolved an action: if another client answered it in that window, this call still
// reports success.) Without a retry, ACTION_ALREADY_RESOLVED is returned as an error.
func (c *Client) RespondToAction(ctx context.Context, executionID, actionID string, answer api.ActionResponse) (api.Execution, error) {
	ctx, retries := withRetryCounter(ctx)
	resp, err := c.api.RespondToActionWithResponse(ctx, executionID, actionID, answer)
	if err != nil {
		return api.Execution{}, transportError("respondToAction", err)
	}
	exec, err := result(resp.HTTPResponse, resp.Body, resp.JSON200)
	if errors.Is(err, ErrActionAlreadyResolved) && retries.retried() {
		c.log.Debug("harness: respondToAction: a retry found the action resolved; an earlier try was applied",
			"execution", executionID, "action", actionID)
		return c.GetExecution(ctx, executionID)
	}
	return exec, err
}

// ListEvents returns the events of an execution with a sequence greater than after, as JSON
// (GET /v1/executions/{id}/events), at most limit of them when limit > 0 (the server may cap
// it). NextCursor is the sequence of the last event returned, or after when none was: pass it
// as the next after to page. It never waits for new events; Events does. It is retried like
// GetExecution.
func (c *Client) ListEvents(ctx context.Context, id string, after int64, limit int) (api.EventList, error) {
	params := &api.ListOrStreamEventsParams{After: &after}
	if limit > 0 {
		params.Limit = &limit
	}
	resp, err := c.api.ListOrStreamEventsWithResponse(ctx, id, params)
	if err != nil {
		return api.EventList{}, transportError("listEvents", err)
	}
	return result(resp.HTTPResponse, resp.Body, resp.JSON200)
}

// IsTerminalState reports whether an execution in state s has ended: succeeded, failed or
// cancelled (s.Terminal(), generated from harness.yaml).
func IsTerminalState(s api.ExecutionState) bool { return s.Terminal() }

// IsTerminalEvent reports whether t ends an execution's events: run.completed, run.failed or
// run.cancelled (t.Terminal(), generated from harness.yaml). It is always an execution's last
// event.
func IsTerminalEvent(t api.StandardEventType) bool { return t.Terminal() }

// ptr points at a copy of v: the SDK's go.mod says go 1.24, where new(expr) does not exist yet.
func ptr[T any](v T) *T { return &v }
