package backend

import (
	"context"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// The protocol's operations on executions. One execution's: locate it, then ask its handle (no
// operation switches on where the execution lives). The listing (an extension, listing.go)
// reads the committed records.

// RespondToAction checks existence, action status and state (in that order, §7.2), then calls
// decode to obtain the response (the HTTP layer validates the body there, so body errors come
// last and the action stays pending), then applies it atomically: the checks are repeated, the
// action is resolved, the execution is running again and action.responded is appended, all
// durable before the provider gets the response. decode runs without any runtime lock held (it
// may read a request body); it may be nil (an empty response).
func (r *Runtime) RespondToAction(ctx context.Context, executionID, actionID string,
	decode func() (api.ActionResponse, error)) (api.Execution, error) {
	h, err := r.openHandle(ctx, executionID)
	if err != nil {
		return api.Execution{}, err
	}
	return h.Respond(ctx, actionID, decode)
}

// CancelExecution returns once the execution is final (cleanup bounded by CancelTimeout). A
// terminal execution is returned as it is (no event; the reason is discarded). reason may be nil.
// If ctx ends first the cancellation still completes; only the wait is abandoned.
func (r *Runtime) CancelExecution(ctx context.Context, id string, reason *string) (api.Execution, error) {
	h, err := r.openHandle(ctx, id)
	if err != nil {
		return api.Execution{}, err
	}
	return h.Cancel(ctx, reason)
}

// GetExecution returns the execution's current snapshot; NOT_FOUND when unknown or another
// tenant's.
func (r *Runtime) GetExecution(ctx context.Context, id string) (api.Execution, error) {
	h, err := r.openHandle(ctx, id)
	if err != nil {
		return api.Execution{}, err
	}
	return h.Snapshot(ctx)
}

// openHandle is what an operation on one execution does first: give up if the caller left or
// the runtime is closing, then locate the execution for the caller's tenant.
func (r *Runtime) openHandle(ctx context.Context, id string) (Handle, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := r.checkOpen(); err != nil {
		return nil, err
	}
	return r.locate(ctx, id)
}

// ListExecutions returns a page of executions, newest first. Each is the committed record,
// which is also what GetExecution shows of a live execution: every state change is committed
// before it is published (see commit and submit), so the record is never behind what a caller
// could have seen. It may be a moment ahead of a live snapshot, never of what is durable.
func (r *Runtime) ListExecutions(ctx context.Context, f ExecutionFilter) (ExecutionPage, error) {
	if err := ctx.Err(); err != nil {
		return ExecutionPage{}, err
	}
	if err := r.checkOpen(); err != nil {
		return ExecutionPage{}, err
	}
	q, err := listQueryOf(f)
	if err != nil {
		return ExecutionPage{}, err
	}
	q.Tenant = TenantFrom(ctx).ID
	q.Undecodable = r.damage.reportUndecodable // skipped: everything else is listed
	if f.ConversationID != "" {
		if _, err := r.GetConversation(ctx, f.ConversationID); err != nil {
			return ExecutionPage{}, err
		}
	}
	recs, next, err := r.store.ListExecutions(q)
	if err != nil {
		return ExecutionPage{}, internalError("list executions", err)
	}
	page := ExecutionPage{Executions: make([]api.Execution, len(recs))}
	for i, rec := range recs {
		page.Executions[i] = cloneExecution(rec.Execution)
	}
	if next != nil {
		page.NextCursor = listCursor(*next)
	}
	return page, nil
}
