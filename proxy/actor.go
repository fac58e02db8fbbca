package proxy

import (
	"net/http"

	"github.com/harness-edge/harness-edge/backend"
)

// Who did it. Options.Actor names the authenticated identity behind a request (the Caddy
// module resolves a placeholder such as {http.auth.user.id}); the handler hands it to the
// runtime in the request's context, which records it as `actor` in the data of the events a
// cancel or an action response causes (backend/actor.go). Unlike the tenant, an identity that
// comes out empty refuses nothing: the events then simply name nobody.

// withActor returns r with its identity in the context; r itself when none is configured or
// the request is not one that can cause a recorded event (only a POST cancels or answers).
func (h *Handler) withActor(r *http.Request) *http.Request {
	if h.opts.Actor == nil || r.Method != http.MethodPost {
		return r
	}
	id := h.opts.Actor(r)
	if id == "" {
		return r
	}
	return r.WithContext(backend.WithActor(r.Context(), id))
}
