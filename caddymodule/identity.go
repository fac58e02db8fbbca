package caddymodule

import (
	"net/http"
	"strings"
)

// identityOf resolves the handler's identity placeholder for one request, as tenantOf does
// the tenant's: {http.auth.user.id} after basic_auth or an authentication provider,
// {http.request.header.X-User} after forward_auth's copy_headers. Placeholders that are not
// set resolve to nothing (ReplaceAll), so the events of a request nobody authenticated name
// nobody rather than the literal text of the placeholder.
func (h *Harness) identityOf(r *http.Request) string {
	// "" outside Caddy's HTTP app: name nobody rather than guess.
	return strings.TrimSpace(resolveForRequest(r, h.Identity))
}

// identityResolver is proxy.Options.Actor: nil when identities are not recorded.
func (h *Harness) identityResolver() func(*http.Request) string {
	if h.Identity == "" {
		return nil
	}
	return h.identityOf
}
