package proxy

import (
	"net/http"
	"strings"
)

// wantsEventStream reports whether the Accept header lists text/event-stream. The reference
// tests for the substring case-sensitively; we parse the header as a list of media ranges and
// compare case-insensitively (media types are case-insensitive, RFC 9110 §8.3.1), so
// "TEXT/EVENT-STREAM" streams and "text/event-streamx" does not. A range with q=0 means "not
// acceptable" and is skipped. Wildcards such as */* keep the JSON replay, as in the reference.
func wantsEventStream(h http.Header) bool {
	for _, value := range h.Values("Accept") {
		for value != "" {
			var mediaRange string
			mediaRange, value, _ = strings.Cut(value, ",")
			mediaType, params, _ := strings.Cut(mediaRange, ";")
			if strings.EqualFold(strings.TrimSpace(mediaType), "text/event-stream") && !qualityZero(params) {
				return true
			}
		}
	}
	return false
}

// qualityZero reports whether media-range parameters carry q=0 (also written 0.0, 0.000).
func qualityZero(params string) bool {
	for params != "" {
		var param string
		param, params, _ = strings.Cut(params, ";")
		name, value, _ := strings.Cut(param, "=")
		if !strings.EqualFold(strings.TrimSpace(name), "q") {
			continue
		}
		value = strings.TrimSpace(value)
		if value == "" || value[0] != '0' {
			return false
		}
		return strings.Trim(value[1:], ".0") == ""
	}
	return false
}
