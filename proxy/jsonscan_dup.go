package proxy

import (
	"bytes"
	"strconv"
	"strings"
)

// Duplicate member names are refused in every body (docs/protocol.md §2.1): JavaScript's
// JSON.parse and encoding/json keep the last one, so {"approved":true,"approved":false} was read
// as a denial by this server and maybe as an approval by a proxy in front of it. RFC 8259 leaves
// the meaning open; encoding/json/v2 refuses them by default, as this does. encoding/json/v2 is
// not in the standard library without GOEXPERIMENT=jsonv2, and the request bodies are walked by
// jsonscan.go anyway, so the check is one more walk of the same valid bytes.

// smallObject is the member count up to which names are compared pairwise; beyond it a map
// keeps the check linear in the size of a hostile object.
const smallObject = 16

// firstDuplicate finds the first member, in the body's order, whose name repeats an earlier
// one of the same object (names compared after unescaping), and returns its JSON Pointer. body
// is valid JSON (json.Valid) whose strings are UTF-8. A name without escapes is compared as
// the body's own bytes, so a clean body of plain names allocates next to nothing.
func firstDuplicate(body []byte) (pointer string, found bool) {
	s := validScan{b: body}
	s.skipSpace()
	var buf [8]pathToken
	path := buf[:0]
	return s.duplicateIn(&path)
}

// duplicateIn walks the value at s.i; path holds its pointer's tokens (joined only when a
// duplicate is found).
func (s *validScan) duplicateIn(path *[]pathToken) (string, bool) {
	switch s.b[s.i] {
	case '{':
		var small [smallObject][]byte
		n := 0
		var large map[string]bool
		s.i++
		for {
			s.skipSpace()
			switch s.b[s.i] {
			case '}':
				s.i++
				return "", false
			case ',':
				s.i++
				s.skipSpace()
			}
			name := nameBytes(s.skipValue())
			*path = append(*path, pathToken{name: name})
			seen := false
			switch {
			case large != nil:
				seen = large[string(name)]
				large[string(name)] = true
			default:
				for _, earlier := range small[:n] {
					if bytes.Equal(earlier, name) {
						seen = true
						break
					}
				}
				if n < smallObject {
					small[n] = name
					n++
				} else {
					large = make(map[string]bool, 4*smallObject)
					for _, earlier := range small {
						large[string(earlier)] = true
					}
					large[string(name)] = true
				}
			}
			if seen {
				return joinPointer(*path), true
			}
			s.skipSpace()
			s.i++ // :
			s.skipSpace()
			if p, dup := s.duplicateIn(path); dup {
				return p, true
			}
			*path = (*path)[:len(*path)-1]
		}
	case '[':
		s.i++
		for n := 0; ; n++ {
			s.skipSpace()
			switch s.b[s.i] {
			case ']':
				s.i++
				return "", false
			case ',':
				s.i++
				s.skipSpace()
			}
			*path = append(*path, pathToken{index: n, isIndex: true})
			if p, dup := s.duplicateIn(path); dup {
				return p, true
			}
			*path = (*path)[:len(*path)-1]
		}
	}
	s.skipValue()
	return "", false
}

// nameBytes is a member name token's unescaped bytes: the token's own inside when it has no
// escape (the body is valid UTF-8), else encoding/json's unquoting.
func nameBytes(tok []byte) []byte {
	inner := tok[1 : len(tok)-1]
	if !containsBackslash(inner) {
		return inner
	}
	return []byte(unquote(tok))
}

// pathToken is a member name or an array index of a JSON Pointer being walked.
type pathToken struct {
	name    []byte
	index   int
	isIndex bool
}

// joinPointer is the JSON Pointer (RFC 6901) of a path of member names and indexes.
func joinPointer(path []pathToken) string {
	var b strings.Builder
	for _, token := range path {
		b.WriteByte('/')
		if token.isIndex {
			b.WriteString(strconv.Itoa(token.index))
		} else {
			b.WriteString(pointerToken(string(token.name)))
		}
	}
	return b.String()
}
