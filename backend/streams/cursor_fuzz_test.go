package streams_test

import (
	"errors"
	"testing"

	"github.com/harness-edge/harness-edge/backend/streams"
)

// FuzzParseCursor: whatever a client sends as a cursor, ParseCursor refuses it with one of its
// two errors or reads a position that formats back to exactly what was sent; a cursor of one
// scope is never read in another.
func FuzzParseCursor(f *testing.F) {
	_, h := newHub(f, streams.Options{})
	conv, tenant := streams.ConversationScope("acme", convID(1)), streams.TenantScope("acme")
	for _, seed := range []string{"0", "", "-", "7", h.Cursor(conv, 1), h.Cursor(tenant, 42), h.Cursor(conv, 9007199254740991),
		h.Cursor(conv, 1) + "0", "000000000000-1", "ffffffffffff-01", "ABCDEFABCDEF-3", "zzzzzzzzzzzz-1"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, cursor string) {
		pos, err := h.ParseCursor(conv, cursor)
		if err != nil {
			if !errors.Is(err, streams.ErrMalformedCursor) && !errors.Is(err, streams.ErrForeignCursor) {
				t.Fatalf("ParseCursor(%q): %v, neither malformed nor foreign", cursor, err)
			}
			return
		}
		if pos < 0 || pos > 1<<53-1 || h.Cursor(conv, pos) != cursor {
			t.Fatalf("ParseCursor(%q) = %d, which formats as %q", cursor, pos, h.Cursor(conv, pos))
		}
		if pos > 0 {
			if _, err := h.ParseCursor(tenant, cursor); !errors.Is(err, streams.ErrForeignCursor) {
				t.Fatalf("the conversation's cursor %q read on the tenant stream: %v", cursor, err)
			}
		}
	})
}
