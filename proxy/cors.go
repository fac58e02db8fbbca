package proxy

import "net/http"

// CORS for the origins on Options.AllowedOrigins (origin.go decides whether a request is served
// at all; this file lets a page on an allowed origin read the answers).
//
// A page served from another origin needs, from the browser's point of view:
//   - a preflight (OPTIONS with Access-Control-Request-Method) answered before it may POST JSON
//     or send a header that is not CORS-safelisted (Authorization, Last-Event-ID);
//   - Access-Control-Allow-Origin naming its origin on every answer it reads, with
//     Access-Control-Allow-Credentials so that fetch(…, {credentials: "include"}) and
//     new EventSource(url, {withCredentials: true}) may send cookies or basic-auth credentials;
//   - Access-Control-Expose-Headers for the response headers it reads beyond the safelisted
//     ones (Location, Idempotent-Replayed, Retry-After, …).
//
// The origin is echoed, never "*": "*" forbids credentials, and echoing only allowed origins
// keeps the list the one place that grants access. Same-origin requests get nothing: the
// browser does not need it.

// corsAllowMethods are the methods the API serves (allowRead/allowWrite in routes.go).
const corsAllowMethods = "GET, HEAD, POST, PATCH, DELETE"

// corsAllowHeaders are the request headers a cross-origin page may send: JSON bodies, a bearer
// token, the SSE resume header (EventSource sends it on reconnect), content negotiation, and the
// W3C trace context a page traced with OpenTelemetry's web SDK sends (docs/operations.md).
const corsAllowHeaders = "Accept, Authorization, Content-Type, Last-Event-ID, Cache-Control, traceparent, tracestate"

// corsExposeHeaders are the response headers the API sets that a page may want to read.
const corsExposeHeaders = "Location, Idempotent-Replayed, Retry-After, Allow, " + executionIDHeader + ", " + heartbeatHeader

// corsMaxAge lets a browser cache a preflight for 10 minutes (Chromium's own cap is 2 hours).
const corsMaxAge = "600"

// applyCORS adds the CORS response headers for a request from an allowed foreign origin, and
// answers its preflight. It reports whether the request was answered (a preflight). Call it
// after the origin check: it assumes the request's origin, if any, is allowed.
func (p originPolicy) applyCORS(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	hdr := w.Header()
	// Answers differ by Origin from here on: caches must key on it.
	hdr.Add("Vary", "Origin")
	if normalized, err := NormalizeOrigin(origin); err != nil || normalized == ownOrigin(r) {
		return false
	}
	hdr.Set("Access-Control-Allow-Origin", origin)
	hdr.Set("Access-Control-Allow-Credentials", "true")
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		hdr.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		return false
	}
	hdr.Add("Vary", "Access-Control-Request-Method")
	hdr.Add("Vary", "Access-Control-Request-Headers")
	hdr.Set("Access-Control-Allow-Methods", corsAllowMethods)
	hdr.Set("Access-Control-Allow-Headers", corsAllowHeaders)
	hdr.Set("Access-Control-Max-Age", corsMaxAge)
	w.WriteHeader(http.StatusNoContent)
	return true
}
