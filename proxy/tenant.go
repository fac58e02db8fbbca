package proxy

import (
	"net/http"
	"strings"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Tenancy at the HTTP edge. Options.Tenant names the caller's tenant from the request (the Caddy
// module resolves a placeholder such as {http.auth.user.id}); the handler hands it to the runtime
// in the request's context, and the runtime enforces it on every lookup (see backend/tenant.go).
// A request whose tenant comes out empty is refused before it is routed: when the
// authentication in front is missing or misconfigured, nobody is served as a shared anonymous
// tenant.

// codeUnauthenticated refuses a request that names no tenant (an addition to the reference's
// codes; HTTP 401).
const codeUnauthenticated = string(api.ErrorCodeUNAUTHENTICATED)

const msgNoTenant = "Request is not authenticated: it names no tenant"

// retryAfterUnavailable is the Retry-After of a 503 UNAVAILABLE, in seconds: a stalled store
// or an unsure lease lasts seconds; through a load balancer the retry usually reaches another
// node at once.
const retryAfterUnavailable = "1"

// retryAfterRateLimited is the Retry-After of a 429, in seconds. The server cannot know when one
// of the tenant's executions will end; a second is short enough to notice quickly and long
// enough not to hammer it (the SDK backs off further on repeated 429s).
const retryAfterRateLimited = "1"

// withTenant returns r with its tenant in the context, or answers 401 and returns false.
// The probes need no tenant: /healthz is constant and /readyz says only whether this node can
// serve, nothing about anyone's objects, and a load balancer's health check sends no
// credentials (a 401 there would take every node out of rotation).
func (h *Handler) withTenant(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	if h.opts.Tenant == nil {
		if h.opts.MaxRunning == 0 {
			return r, true // the anonymous tenant, unbounded: the context's zero value
		}
		return r.WithContext(backend.WithTenant(r.Context(), backend.Tenant{MaxRunning: h.opts.MaxRunning})), true
	}
	if isProbe(r) {
		return r, true
	}
	id := h.opts.Tenant(r)
	if strings.TrimSpace(id) == "" {
		writeProblem(w, problem{
			status: http.StatusUnauthorized,
			body:   api.Problem{Code: codeUnauthenticated, Message: msgNoTenant},
		})
		return r, false
	}
	t := backend.Tenant{ID: id, MaxRunning: h.opts.MaxRunning}
	if n, ok := h.opts.TenantMaxRunning[id]; ok {
		t.MaxRunning = n
	}
	return r.WithContext(backend.WithTenant(r.Context(), t)), true
}

// isProbe reports whether r is for /healthz or /readyz, as the router resolves its path.
func isProbe(r *http.Request) bool {
	res := resolve(r.URL.EscapedPath()).res
	return res == resHealth || res == resReady
}
