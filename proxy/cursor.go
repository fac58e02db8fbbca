package proxy

import (
	"net/url"
	"strings"
)

// maxCursor is the largest sequence the protocol allows: JavaScript's Number.MAX_SAFE_INTEGER.
const maxCursor = 1<<53 - 1

// parseCursor parses an event cursor strictly: decimal digits only (no sign, space, exponent or
// hex, which the reference's Number() would let through), at most 2^53−1. The empty string is
// 0, for compatibility with the reference's `after=`.
func parseCursor(s string) (int64, bool) {
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
		if n > maxCursor {
			return 0, false
		}
	}
	return n, true
}

// parseLimit parses the JSON replay's page size: decimal digits, at least 1. A value too large
// to represent is clamped, since the server caps the page anyway.
func parseLimit(s string) (int, bool) {
	const maxInt = int(^uint(0) >> 1)
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > (maxInt-9)/10 {
			n = maxInt
			continue
		}
		n = n*10 + int(c-'0')
	}
	return n, n >= 1
}

// queryParam finds the first value of name in a raw query string. Unlike url.ParseQuery it
// does not drop a pair it cannot unescape: such a value is reported as present but invalid, so
// `after=%zz` is a 400 rather than a silent 0. It also allocates nothing for the common case.
func queryParam(rawQuery, name string) (value string, present, valid bool) {
	for rawQuery != "" {
		var pair string
		pair, rawQuery, _ = strings.Cut(rawQuery, "&")
		key, val, _ := strings.Cut(pair, "=")
		if strings.ContainsAny(key, "%+") {
			decoded, err := url.QueryUnescape(key)
			if err != nil {
				continue
			}
			key = decoded
		}
		if key != name {
			continue
		}
		if strings.ContainsAny(val, "%+") {
			decoded, err := url.QueryUnescape(val)
			if err != nil {
				return "", true, false
			}
			val = decoded
		}
		return val, true, true
	}
	return "", false, true
}
