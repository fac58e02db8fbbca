package mock_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/backend/providers/mock"
)

// runeChunks is Chunks as it was first written, over the output's runes: the reference the
// faster Chunks must match, chunk for chunk (invalid UTF-8 included, which []rune turns into
// U+FFFD).
func runeChunks(output string) []string {
	if output == "" {
		return nil
	}
	runes := []rune(output)
	var chunks []string
	i := 0
	for i < len(runes) && isSpace(runes[i]) {
		i++
	}
	if i == len(runes) {
		return []string{output}
	}
	for i < len(runes) {
		start := i
		for i < len(runes) && !isSpace(runes[i]) {
			i++
		}
		for i < len(runes) && isSpace(runes[i]) {
			i++
		}
		chunks = append(chunks, string(runes[start:i]))
	}
	return chunks
}

func isSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', '\u00a0', '\u1680', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff':
		return true
	}
	return r >= '\u2000' && r <= '\u200a'
}

func FuzzChunksMatchRunes(f *testing.F) {
	for _, s := range []string{"Echo: hello runtime", "  lead  and trail  ", "   ", "", "a\u00a0b\u2003c\ufeffd\u0085e", "x\xffy z\xc3", "\u3000\u3000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := mock.Chunks(s), runeChunks(s); !slices.Equal(got, want) {
			t.Fatalf("Chunks(%q) = %q, want %q", s, got, want)
		}
	})
}

// A delta's text is a piece of the output, not a copy: Chunks allocates its slice and nothing
// per chunk (a copy of each word was an allocation per live event of the mock).
func TestChunksAllocatesOnlyItsSlice(t *testing.T) {
	output := "Echo: " + strings.Repeat("word ", 49) + "last"
	if allocs := testing.AllocsPerRun(50, func() { mock.Chunks(output) }); allocs > 1 {
		t.Fatalf("Chunks of 51 words allocated %.0f times; want 1", allocs)
	}
}
