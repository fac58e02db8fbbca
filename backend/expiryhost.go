package backend

import (
	"context"
	"time"

	"github.com/harness-edge/harness-edge/backend/approvals"
	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The runtime's side of expiry (package approvals runs the loop; docs/protocol.md, "Expiry"):
// it answers through the handle of the action's execution, wherever it runs, as a caller's
// answer would go, so the one-winner rule of a raced answer holds.

// expireTimeout bounds one expiry's answer (a command to another node included): past it the
// loop tries again later.
const expireTimeout = 30 * time.Second

type expiryHost struct{ r *Runtime }

var _ approvals.Host = expiryHost{}

// Expire answers a reject as the actor expiry, naming the deadline in the message the
// provider passes on.
func (h expiryHost) Expire(ctx context.Context, a store.Action) error {
	ctx, cancel := context.WithTimeout(WithActorOf(ctx, expiryActor()), expireTimeout)
	defer cancel()
	handle, err := h.r.locateFor(a.Request.ExecutionID, func(string) bool { return true })
	if err != nil {
		return notPendingIsDone(err)
	}
	reject := api.DecisionReject
	message := "No answer before the action expired at " + deref(a.Request.ExpiresAt)
	_, err = handle.Respond(ctx, a.Request.ID, func() (api.ActionResponse, error) {
		return api.ActionResponse{Decision: &reject, Message: &message}, nil
	})
	return notPendingIsDone(err)
}

// notPendingIsDone: an action someone answered first, or whose execution ended or is gone, has
// nothing left to expire.
func notPendingIsDone(err error) error {
	switch ErrorCode(err) {
	case CodeActionNotFound, CodeActionAlreadyResolved, CodeInvalidState, CodeNotFound:
		return nil
	}
	return err
}

// Vouches: on a shared store, only while this node can vouch for its lease.
func (h expiryHost) Vouches() bool { return h.r.cluster == nil || h.r.cluster.Sure() }
