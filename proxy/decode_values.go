package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// The value decoders of request bodies (decode.go): a member's string, boolean, object or list
// of strings, the UTF-16 length the reference counts, and a JSON syntax check without
// encoding/json's nesting limit.

func requiredString(m members, name string) (string, bool) {
	raw, present := m[name]
	if !present {
		return "", false
	}
	return stringValue(raw)
}

// The value decoders below get members of a body that json.Valid accepted (decodeMembers).

// stringValue decodes a JSON string; null and every other type fail.
func stringValue(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	return unquote(raw), true
}

func boolValue(raw json.RawMessage) (value, ok bool) {
	switch string(raw) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// objectValue decodes a JSONObject: an object (not null, not an array) whose numbers are
// finite. encoding/json fails on a number that overflows float64, which is exactly the
// reference's rule that non-finite numbers are not JSON values.
func objectValue(raw json.RawMessage) (api.JSONObject, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	s := validScan{b: raw}
	obj, ok := s.object()
	if !ok {
		return nil, false
	}
	return obj, true
}

// nonEmptyStrings decodes an array whose items are all non-empty strings.
func nonEmptyStrings(raw json.RawMessage) ([]string, bool) {
	if len(raw) == 0 || raw[0] != '[' {
		return nil, false
	}
	out := []string{}
	s := validScan{b: raw}
	ok := s.eachItem(func(item []byte) bool {
		str, ok := stringValue(item)
		out = append(out, str)
		return ok && str != ""
	})
	if !ok {
		return nil, false
	}
	return out, true
}

// utf16LenWithin reports whether s has between min and max UTF-16 code units, the length
// JavaScript reports: characters outside the Basic Multilingual Plane count twice.
func utf16LenWithin(s string, min, max int) bool {
	if len(s) < min {
		return false // each code unit takes at least one byte
	}
	if len(s) <= max && isASCII(s) {
		return true
	}
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
		if n > max {
			return false
		}
	}
	return n >= min
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func tooManyCapabilitiesMessage(limit int) string {
	return "requiredCapabilities must not list more than " + strconv.Itoa(limit) + " capabilities"
}

// validJSONAnyDepth reports whether body is exactly one valid JSON value (surrounding
// whitespace allowed), like json.Valid but without encoding/json's nesting limit: the
// Decoder's token walk keeps its own stack of open containers. Numbers stay json.Number, so
// 1e400 is valid syntax here as in json.Valid.
func validJSONAnyDepth(body []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok {
		case json.Delim('['), json.Delim('{'):
			depth++
		case json.Delim(']'), json.Delim('}'):
			depth--
		}
		if depth == 0 {
			break
		}
	}
	_, err := dec.Token()
	return err == io.EOF
}
