package backend

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
	depth := 0
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '"':
			// Skip the string: up to the next quote that is not escaped.
			for i++; i < len(raw) && raw[i] != '"'; i++ {
				if raw[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			depth++
			if depth > limit {
				return true
			}
		case ']', '}':
			depth--
		}
	}
	return false
}
