package proxy

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Browser safety: cross-origin requests are refused unless their origin is allowed.
//
// The API has no authentication of its own, and a browser lets any web page send requests to it,
// loopback included: a cross-origin `text/plain` POST needs no CORS preflight, so without this
// check a page the user merely visits could start executions (and an ACP agent with the page's
// prompt). Browsers put the page's origin in the Origin header of every such request, and a page
// cannot forge it. So a request with an Origin header is served only when that origin is the
// API's own (same scheme, host and port as the request) or is on Options.AllowedOrigins;
// anything else answers 403 ORIGIN_NOT_ALLOWED before the request is routed. Requests without
// Origin (SDKs, curl, servers) are what they always were.
//
// `Origin: null` is refused and cannot be allowed: browsers send it for opaque origins (sandboxed
// iframes, file: and data: documents, some redirects), and any page can make itself opaque by
// loading its script in a sandboxed iframe, so allowing "null" would allow every page.
//
// This decides whether a request is served; cors.go gives the allowed origins the CORS headers
// (and preflight answers) a page needs to read the answers and send JSON.

const codeOriginNotAllowed = string(api.ErrorCodeORIGINNOTALLOWED)

// originPolicy is the parsed allow-list.
type originPolicy struct {
	allowed map[string]bool
}

func newOriginPolicy(origins []string) originPolicy {
	p := originPolicy{allowed: make(map[string]bool, len(origins))}
	for _, o := range origins {
		if normalized, err := NormalizeOrigin(o); err == nil {
			p.allowed[normalized] = true
		}
	}
	return p
}

// refuses returns the Origin a request must be refused for, or "" to serve it.
func (p originPolicy) refuses(r *http.Request) string {
	values := r.Header.Values("Origin")
	if len(values) == 0 {
		return ""
	}
	origin := values[0]
	if len(values) > 1 {
		return origin // a browser sends one; two is not a browser we can reason about
	}
	normalized, err := NormalizeOrigin(origin)
	if err != nil {
		return origin
	}
	if normalized == ownOrigin(r) || p.allowed[normalized] {
		return ""
	}
	return origin
}

// ownOrigin is the origin the request was sent to: its scheme (https when it came over TLS) and
// its Host header, normalized like an Origin.
func ownOrigin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return normalizeHost(scheme, r.Host)
}

func originNotAllowed(w http.ResponseWriter, origin string) {
	writeProblem(w, problem{
		status: http.StatusForbidden,
		body:   api.Problem{Code: codeOriginNotAllowed, Message: "Origin not allowed: " + origin},
	})
}

// NormalizeOrigin checks that s is a serialized origin, scheme://host[:port] as browsers send it
// in the Origin header (no path, query, fragment or user), and returns it lower-cased with the
// scheme's default port left out, so that equal origins compare equal. "null" is not an origin.
func NormalizeOrigin(s string) (string, error) {
	if s == "null" {
		return "", errors.New(`"null" (an opaque origin) cannot be allowed: any page can send it`)
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	if u.Scheme == "" || u.Host == "" || u.Opaque != "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return "", errors.New("an origin is scheme://host[:port], without path, query or user: " + s)
	}
	return normalizeHost(strings.ToLower(u.Scheme), u.Host), nil
}

// normalizeHost joins scheme and host, lower-casing the host and dropping the scheme's default
// port (a browser leaves it out of Origin, a client may put it in Host).
func normalizeHost(scheme, host string) string {
	host = strings.ToLower(host)
	if h, port, err := net.SplitHostPort(host); err == nil {
		if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
			host = h
			if strings.Contains(h, ":") {
				host = "[" + h + "]" // IPv6 literal
			}
		}
	}
	return scheme + "://" + host
}
