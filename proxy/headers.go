package proxy

import "net/http"

// setHeaders sets the response headers kv (key, value, key, value, …), their values sharing one
// allocation: header.Set allocates a one-value slice per header, and a stream's answer sets
// seven of them per execution. Each value gets a slice of its own (length and capacity one),
// so a later Add or an in-place rewrite of one header (Caddy's header directive) touches only
// that header of this response.
func setHeaders(h http.Header, kv ...string) {
	values := make([]string, len(kv)/2)
	for i := range values {
		values[i] = kv[2*i+1]
		h[http.CanonicalHeaderKey(kv[2*i])] = values[i : i+1 : i+1]
	}
}
