package hotwindow

import (
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
)

func events(n, size int) ([]store.Event, int) {
	out := make([]store.Event, n)
	for i := range out {
		out[i] = store.Event{Sequence: int64(i + 1), JSON: []byte(strings.Repeat("x", size))}
	}
	return out, n * size
}

// Within both bounds nothing moves; past the count the newer half stays; past MaxBytes the
// newer events under MaxBytes/2 stay, and always at least the newest one.
func TestTrim(t *testing.T) {
	hot, bytes := events(10, 10)
	if kept, drop, _ := trim(hot, bytes, 10); drop != 0 || len(kept) != 10 {
		t.Fatalf("within bounds: dropped %d, kept %d", drop, len(kept))
	}
	hot, bytes = events(11, 10)
	kept, drop, droppedBytes := trim(hot, bytes, 10)
	if drop != 6 || len(kept) != 5 || kept[0].Sequence != 7 || droppedBytes != 60 {
		t.Fatalf("past the count: dropped %d (%d bytes), kept %d from %d; want the newest 5", drop, droppedBytes, len(kept), kept[0].Sequence)
	}
	hot, bytes = events(4, MaxBytes/3)
	kept, drop, droppedBytes = trim(hot, bytes, 100)
	if bytes-droppedBytes > MaxBytes/2 || len(kept) != 1 || kept[0].Sequence != 4 || drop != 3 {
		t.Fatalf("past MaxBytes: kept %d events, %d bytes", len(kept), bytes-droppedBytes)
	}
	huge, bytes := events(1, MaxBytes+1)
	if kept, drop, _ := trim(huge, bytes, 100); drop != 0 || len(kept) != 1 {
		t.Fatal("the newest event is always kept, however big")
	}
}
