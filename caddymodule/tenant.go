package caddymodule

import (
	"fmt"
	"net/http"

	"github.com/caddyserver/caddy/v2"
)

// tenantOf resolves the handler's tenant placeholder for one request with the request's
// replacer: {http.auth.user.id} after basic_auth or an authentication provider,
// {http.request.header.X-Tenant} after forward_auth's copy_headers, and so on. Placeholders
// that are not set resolve to nothing (ReplaceAll, not ReplaceKnown), so a request that the
// authentication in front did not identify gets an empty tenant, which package proxy refuses
// with 401: it never shares the literal text "{http.auth.user.id}" with everyone else.
func (h *Harness) tenantOf(r *http.Request) string {
	return resolveForRequest(r, h.Tenant) // "" outside Caddy's HTTP app: refused, not guessed
}

// resolveForRequest resolves the placeholders of template with the request's replacer (those
// not set resolve to nothing); "" for a request not served by Caddy's HTTP app, which has no
// replacer.
func resolveForRequest(r *http.Request, template string) string {
	repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if !ok {
		return ""
	}
	return repl.ReplaceAll(template, "")
}

// tenantResolver is proxy.Options.Tenant: nil when tenancy is off.
func (h *Harness) tenantResolver() func(*http.Request) string {
	if h.Tenant == "" {
		return nil
	}
	return h.tenantOf
}

func (h *Harness) checkTenantSettings() error {
	if h.MaxRunning < 0 {
		return fmt.Errorf("max_running must not be negative, got %d", h.MaxRunning)
	}
	return nil
}
