package proxy

import (
	"net/http"
	"strings"
	"testing"
)

// TestCORSForAllowedOrigins: an allowed foreign origin gets its preflight answered (before
// tenancy, which a credential-less preflight could not pass) and CORS headers on every answer,
// its origin echoed with credentials allowed; the API's own origin and requests without Origin
// get none; a foreign origin that is not allowed still gets 403, preflight included.
func TestCORSForAllowedOrigins(t *testing.T) {
	const app = "http://localhost:3000"
	ts := newTestServer(t, Options{AllowedOrigins: []string{app}})
	own := ts.srv.URL

	pre := ts.send(request{method: http.MethodOptions, path: "/v1/executions", header: map[string]string{
		"Origin": app, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type",
	}})
	requireStatus(t, pre, http.StatusNoContent)
	wantHeader(t, pre.header, "Access-Control-Allow-Origin", app)
	wantHeader(t, pre.header, "Access-Control-Allow-Credentials", "true")
	wantHeader(t, pre.header, "Access-Control-Allow-Methods", "GET, HEAD, POST, PATCH, DELETE")
	for _, h := range []string{"Content-Type", "Last-Event-ID", "Authorization", "traceparent", "tracestate"} {
		if !strings.Contains(pre.header.Get("Access-Control-Allow-Headers"), h) {
			t.Errorf("preflight allows headers %q, want %s among them", pre.header.Get("Access-Control-Allow-Headers"), h)
		}
	}
	if !strings.Contains(strings.Join(pre.header.Values("Vary"), ","), "Origin") {
		t.Errorf("preflight Vary %q, want Origin", pre.header.Values("Vary"))
	}

	conv := ts.do(request{method: http.MethodPost, path: "/v1/conversations", body: new("{}"), header: map[string]string{
		"Origin": app, "Content-Type": "application/json",
	}})
	requireStatus(t, conv, http.StatusCreated)
	wantHeader(t, conv.header, "Access-Control-Allow-Origin", app)
	wantHeader(t, conv.header, "Access-Control-Allow-Credentials", "true")
	for _, h := range []string{"Location", "Idempotent-Replayed", "Retry-After"} {
		if !strings.Contains(conv.header.Get("Access-Control-Expose-Headers"), h) {
			t.Errorf("exposed headers %q, want %s among them", conv.header.Get("Access-Control-Expose-Headers"), h)
		}
	}

	// An error answer is readable too: the page sees the Problem, not an opaque network error.
	missing := ts.send(request{method: http.MethodGet, path: "/v1/executions/exec_unknown", header: map[string]string{"Origin": app}})
	requireStatus(t, missing, http.StatusNotFound)
	wantHeader(t, missing.header, "Access-Control-Allow-Origin", app)

	for _, origin := range []string{"", own} {
		res := ts.send(request{method: http.MethodGet, path: "/v1/runtime", header: map[string]string{"Origin": origin}})
		requireStatus(t, res, http.StatusOK)
		if got := res.header.Get("Access-Control-Allow-Origin"); got != "" {
			t.Errorf("Origin %q: Access-Control-Allow-Origin %q, want none", origin, got)
		}
	}

	refused := ts.send(request{method: http.MethodOptions, path: "/v1/executions", header: map[string]string{
		"Origin": "http://evil.example", "Access-Control-Request-Method": "POST",
	}})
	requireStatus(t, refused, http.StatusForbidden)
	if got := refused.header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Errorf("a refused origin got Access-Control-Allow-Origin %q", got)
	}
}

func wantHeader(t *testing.T, h http.Header, name, want string) {
	t.Helper()
	if got := h.Get(name); got != want {
		t.Errorf("%s: %q, want %q", name, got, want)
	}
}
