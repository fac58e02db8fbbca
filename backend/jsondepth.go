package backend

import "unicode/utf8"

// MaxJSONDepth bounds how deeply a JSON value that the runtime keeps (an execution's config, a
// conversation's metadata, an action's payload or response, an artifact's data) may nest
// objects and arrays: {"a":[1]} has depth 2, a scalar 0. encoding/json refuses to decode
// anything nested more than 10,000 levels, and a stored record wraps the caller's value in a
// few levels of its own, so without a bound far below the decoder's a single request could
// store a record that no later read (and no restart) can decode. 64 is far beyond what any
// real configuration needs and cheap to check.
const MaxJSONDepth = 64

// ExceedsJSONDepth reports whether raw nests objects and arrays more than limit levels deep.
// It is a byte scan that skips string contents, so it needs no allocation and works on any
// input: for invalid JSON the answer is meaningless but the scan still ends, and the caller's
// syntax check decides. It stops at the first level past limit, so the cost of a hostile
// input is bounded by its length.
func ExceedsJSONDepth(raw []byte, limit int) bool {
	tooDeep, _ := ScanJSONText(raw, limit)
	return tooDeep
}

// ScanJSONText is ExceedsJSONDepth, and in the same pass reports whether a string in raw holds
// bytes that are not UTF-8. JSON text is UTF-8 (RFC 8259, §8.1), and outside its strings valid
// JSON is ASCII (the syntax check refuses anything else there); encoding/json decodes such bytes
// as U+FFFD, so a request that carries them would be stored changed. The scan already reads
// every byte of every string to find where it ends, so telling whether those bytes are UTF-8
// costs one comparison per byte until a non-ASCII one. Once too deep it stops: invalidUTF8 then
// says nothing of the rest.
func ScanJSONText(raw []byte, limit int) (tooDeep, invalidUTF8 bool) {
	depth := 0
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '"':
			// Skip the string: up to the next quote that is not escaped.
			for i++; i < len(raw) && raw[i] != '"'; i++ {
				switch c := raw[i]; {
				case c == '\\':
					i++
				case c >= utf8.RuneSelf:
					r, size := utf8.DecodeRune(raw[i:])
					if r == utf8.RuneError && size == 1 {
						invalidUTF8 = true
					}
					i += size - 1
				}
			}
		case '[', '{':
			depth++
			if depth > limit {
				return true, invalidUTF8
			}
		case ']', '}':
			depth--
		}
	}
	return false, invalidUTF8
}
