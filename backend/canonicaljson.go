package backend

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// appendCanonicalJSON writes v in a canonical form in the spirit of RFC 8785 (JSON
// Canonicalization Scheme): object keys sorted by Unicode code point (byte order of their UTF-8),
// no insignificant whitespace, numbers in JavaScript's shortest round-trip form (so 1 and 1.0 are
// the same), and strings escaped minimally. v must be made of JSON types (see normalizeObject);
// json.Number is accepted too.
func appendCanonicalJSON(buf []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(buf, "null"...), nil
	case bool:
		return strconv.AppendBool(buf, v), nil
	case string:
		return appendCanonicalString(buf, v), nil
	case float64:
		return appendCanonicalNumber(buf, v)
	case json.Number:
		f, err := v.Float64()
		if err != nil {
			return nil, fmt.Errorf("canonical JSON: number %q: %w", v, err)
		}
		return appendCanonicalNumber(buf, f)
	case []any:
		buf = append(buf, '[')
		for i, e := range v {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = appendCanonicalJSON(buf, e); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys) // Go compares strings bytewise: UTF-8 byte order is code point order
		buf = append(buf, '{')
		for i, k := range keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendCanonicalString(buf, k)
			buf = append(buf, ':')
			var err error
			if buf, err = appendCanonicalJSON(buf, v[k]); err != nil {
				return nil, err
			}
		}
		return append(buf, '}'), nil
	default:
		return nil, fmt.Errorf("canonical JSON: unsupported type %T", v)
	}
}

// appendCanonicalNumber formats f like JavaScript's Number.prototype.toString (ECMAScript
// Number::toString), which is what RFC 8785 prescribes: integers and ordinary magnitudes in plain
// decimal, very large or very small ones in exponent form without a leading zero in the exponent.
func appendCanonicalNumber(buf []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("canonical JSON: non-finite number")
	}
	if f == 0 {
		return append(buf, '0'), nil // also -0
	}
	abs := math.Abs(f)
	if abs >= 1e-6 && abs < 1e21 {
		return strconv.AppendFloat(buf, f, 'f', -1, 64), nil
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // e.g. 1e+21, 1.5e-07
	mantissa, exp, _ := strings.Cut(s, "e")
	sign := exp[0]
	digits := strings.TrimLeft(exp[1:], "0")
	buf = append(buf, mantissa...)
	buf = append(buf, 'e', sign)
	return append(buf, digits...), nil
}

// appendCanonicalString escapes only what JSON requires: the quote, the backslash and control
// characters (with the short forms where JSON has them). Invalid UTF-8 becomes U+FFFD so the
// output is always valid JSON.
func appendCanonicalString(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			buf = append(buf, "\ufffd"...)
		case r == '"':
			buf = append(buf, '\\', '"')
		case r == '\\':
			buf = append(buf, '\\', '\\')
		case r == '\b':
			buf = append(buf, '\\', 'b')
		case r == '\f':
			buf = append(buf, '\\', 'f')
		case r == '\n':
			buf = append(buf, '\\', 'n')
		case r == '\r':
			buf = append(buf, '\\', 'r')
		case r == '\t':
			buf = append(buf, '\\', 't')
		case r < 0x20:
			buf = append(buf, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf])
		default:
			buf = append(buf, s[i:i+size]...)
		}
		i += size
	}
	return append(buf, '"')
}
