package proxy

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// A decoder of request bodies without reflection. Bodies are small (a start is ~150 bytes) but
// one arrives per execution, and encoding/json's reflective Unmarshal into a map of raw
// members, then into each field, was ~60 allocations and a few microseconds of every start.
//
// It only ever runs on bytes json.Valid accepted, so it needs no error paths for syntax: what it
// must do is decode exactly as encoding/json does, which the fuzz test against encoding/json
// (FuzzScanMatchesEncodingJSON) checks:
//   - strings (keys and values) are unquoted by encoding/json itself unless they are plain
//     (no escape, valid UTF-8), where unquoting is the identity; so escapes, surrogates and the
//     replacement of invalid UTF-8 by U+FFFD stay encoding/json's;
//   - numbers become float64 through strconv.ParseFloat as in encoding/json, and a number out
//     of float64's range fails the whole value (encoding/json's UnmarshalTypeError);
//   - in objects a repeated key keeps its last value.

// validScan walks JSON that json.Valid accepted.
type validScan struct {
	b []byte
	i int
}

func (s *validScan) skipSpace() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// skipValue moves past the value that starts at s.i (no leading space) and returns its bytes.
func (s *validScan) skipValue() []byte {
	start := s.i
	switch s.b[s.i] {
	case '"':
		s.skipString()
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				s.skipString()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			s.i++
			if depth == 0 {
				break
			}
		}
	default: // number, true, false, null
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return s.b[start:s.i]
			}
			s.i++
		}
	}
	return s.b[start:s.i]
}

// skipString moves past the string whose opening quote is at s.i.
func (s *validScan) skipString() {
	for s.i++; s.i < len(s.b); s.i++ {
		switch s.b[s.i] {
		case '\\':
			s.i++ // the escaped byte (for \uXXXX the hex digits need no care)
		case '"':
			s.i++
			return
		}
	}
}

// eachMember calls fn with every member of the object at s.i, in order, each value's bytes
// without surrounding space. It returns false if fn does.
func (s *validScan) eachMember(fn func(key string, raw []byte) bool) bool {
	s.i++ // {
	for {
		s.skipSpace()
		if s.b[s.i] == '}' {
			s.i++
			return true
		}
		if s.b[s.i] == ',' {
			s.i++
			s.skipSpace()
		}
		key := memberName(s.skipValue())
		s.skipSpace()
		s.i++ // :
		s.skipSpace()
		if !fn(key, s.skipValue()) {
			return false
		}
	}
}

// eachItem calls fn with every item of the array at s.i. It returns false if fn does.
func (s *validScan) eachItem(fn func(raw []byte) bool) bool {
	s.i++ // [
	for {
		s.skipSpace()
		switch s.b[s.i] {
		case ']':
			s.i++
			return true
		case ',':
			s.i++
			s.skipSpace()
		}
		if !fn(s.skipValue()) {
			return false
		}
	}
}

// unquote decodes a valid JSON string token as encoding/json does.
func unquote(tok []byte) string {
	inner := tok[1 : len(tok)-1]
	plain := true
	for _, c := range inner {
		if c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain || (utf8.Valid(inner) && !containsBackslash(inner)) {
		return string(inner)
	}
	var s string
	_ = json.Unmarshal(tok, &s) // valid: cannot fail
	return s
}

func containsBackslash(b []byte) bool {
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}

// scanValidMembers visits the members of body, valid JSON whose first non-space byte is '{'.
// The members' names the decoders read are not allocated (memberName).
func scanValidMembers(body []byte, fn func(key string, raw []byte)) {
	s := validScan{b: body}
	s.skipSpace()
	s.eachMember(func(key string, raw []byte) bool { fn(key, raw); return true })
}

// memberName returns the constant for a plain key token the decoders look up, so that reading
// a body allocates no key strings; any other key is unquoted as usual.
func memberName(tok []byte) string {
	switch string(tok[1 : len(tok)-1]) { // no allocation: the conversion only feeds the switch
	case "conversationId":
		return "conversationId"
	case "providerId":
		return "providerId"
	case "input":
		return "input"
	case "requiredCapabilities":
		return "requiredCapabilities"
	case "config":
		return "config"
	case "idempotencyKey":
		return "idempotencyKey"
	case "metadata":
		return "metadata"
	case "reason":
		return "reason"
	case "approved":
		return "approved"
	case "value":
		return "value"
	}
	return unquote(tok)
}

// decodeValidValue decodes raw, one valid JSON value, into encoding/json's types for any
// (map[string]any, []any, string, float64, bool, nil); ok is false where encoding/json's
// Unmarshal into any would fail: a number out of float64's range.
func decodeValidValue(raw []byte) (v any, ok bool) {
	s := validScan{b: raw}
	return s.value()
}

// value decodes the value at s.i in place (one pass, whatever the nesting).
func (s *validScan) value() (any, bool) {
	switch s.b[s.i] {
	case '{':
		return s.object()
	case '[':
		return s.array()
	case '"':
		return unquote(s.skipValue()), true
	case 't':
		s.i += len("true")
		return true, true
	case 'f':
		s.i += len("false")
		return false, true
	case 'n':
		s.i += len("null")
		return nil, true
	default:
		f, err := strconv.ParseFloat(string(s.skipValue()), 64)
		return f, err == nil
	}
}

// object decodes the object at s.i into a map (never nil). Like encoding/json it decodes the
// whole object even after a failure, and reports the failure.
func (s *validScan) object() (map[string]any, bool) {
	obj := map[string]any{}
	ok := true
	s.i++ // {
	for {
		s.skipSpace()
		switch s.b[s.i] {
		case '}':
			s.i++
			return obj, ok
		case ',':
			s.i++
			s.skipSpace()
		}
		key := unquote(s.skipValue())
		s.skipSpace()
		s.i++ // :
		s.skipSpace()
		v, vok := s.value()
		obj[key] = v
		ok = ok && vok
	}
}

// array decodes the array at s.i (never nil).
func (s *validScan) array() ([]any, bool) {
	arr := []any{}
	ok := true
	s.i++ // [
	for {
		s.skipSpace()
		switch s.b[s.i] {
		case ']':
			s.i++
			return arr, ok
		case ',':
			s.i++
			s.skipSpace()
		}
		v, vok := s.value()
		arr = append(arr, v)
		ok = ok && vok
	}
}
