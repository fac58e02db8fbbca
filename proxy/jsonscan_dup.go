package proxy

import (
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
// is valid JSON (json.Valid) whose strings are UTF-8.
func firstDuplicate(body []byte) (pointer string, found bool) {
	s := validScan{b: body}
	s.skipSpace()
	var path []string
	return s.duplicateIn(&path)
}

// duplicateIn walks the value at s.i; path holds its pointer's tokens (joined only when a
// duplicate is found, so that a clean body costs no pointer strings).
func (s *validScan) duplicateIn(path *[]string) (string, bool) {
	switch s.b[s.i] {
	case '{':
		var small []string
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
			name := unquote(s.skipValue())
			*path = append(*path, name)
			if seenName(&small, &large, name) {
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
			*path = append(*path, strconv.Itoa(n))
			if p, dup := s.duplicateIn(path); dup {
				return p, true
			}
			*path = (*path)[:len(*path)-1]
		}
	}
	s.skipValue()
	return "", false
}

// seenName records name and reports whether it was already there.
func seenName(small *[]string, large *map[string]bool, name string) bool {
	if *large != nil {
		if (*large)[name] {
			return true
		}
		(*large)[name] = true
		return false
	}
	for _, n := range *small {
		if n == name {
			return true
		}
	}
	*small = append(*small, name)
	if len(*small) > smallObject {
		*large = make(map[string]bool, 2*len(*small))
		for _, n := range *small {
			(*large)[n] = true
		}
	}
	return false
}

// joinPointer is the JSON Pointer (RFC 6901) of a path of member names and indexes.
func joinPointer(path []string) string {
	var b strings.Builder
	for _, token := range path {
		b.WriteByte('/')
		b.WriteString(pointerToken(token))
	}
	return b.String()
}
