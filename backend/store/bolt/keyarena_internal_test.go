package bolt

import (
	"bytes"
	"strings"
	"testing"
)

// Keys from the arena are numberedKey's, and each stays intact while later ones are carved:
// bbolt holds them all until the commit.
func TestKeyArenaKeysAreNumberedKeysThatStayIntact(t *testing.T) {
	var a keyArena
	type pair struct {
		id  string
		n   uint64
		key []byte
	}
	var got []pair
	for i := range 1000 {
		id := "exec_" + strings.Repeat(string(rune('a'+i%26)), 32)
		key := a.numbered(id, uint64(i))
		got = append(got, pair{id, uint64(i), key})
		_ = append(key, 0xff) // capacity is capped: an append must not spill into the next key
	}
	long := strings.Repeat("x", keyArenaChunk) // larger than a chunk share: allocated alone
	got = append(got, pair{long, 7, a.numbered(long, 7)})
	for _, p := range got {
		if want := numberedKey(p.id, p.n); !bytes.Equal(p.key, want) {
			t.Fatalf("key for %s:%d = %x, want %x", p.id[:8], p.n, p.key, want)
		}
	}
}
