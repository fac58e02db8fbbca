package hotwindow

import (
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
)

func seqs(events []store.Event) []int64 {
	out := make([]int64, len(events))
	for i, e := range events {
		out[i] = e.Sequence
	}
	return out
}

// A window answers from memory what it holds, and says how much to read from the store for
// what it dropped or never held (a resumed log starts after its stored events).
func TestWindowReadsFromMemoryOrSaysHowMuchToReadStored(t *testing.T) {
	w := New(4, 0)
	if w.Last() != 0 {
		t.Fatalf("empty log: Last %d", w.Last())
	}
	if events, n := w.Read(0, 0); events != nil || n != 0 {
		t.Fatalf("empty log read: %v, %d", events, n)
	}
	all, _ := events(6, 10)
	w.Append(all[:3])
	if got, n := w.Read(0, 0); len(got) != 3 || n != 0 || got[0].Sequence != 1 {
		t.Fatalf("read all: %v, %d", seqs(got), n)
	}
	if whole, ok := w.Whole(); !ok || len(whole) != 3 {
		t.Fatalf("whole log held: %v, %v", seqs(whole), ok)
	}
	w.Append(all[3:]) // 6 events, limit 4: the newer half stays
	if w.Last() != 6 {
		t.Fatalf("Last %d, want 6", w.Last())
	}
	if _, ok := w.Whole(); ok {
		t.Fatal("Whole after events were dropped")
	}
	if got, n := w.Read(4, 1); len(got) != 1 || got[0].Sequence != 5 || n != 0 {
		t.Fatalf("read after 4, limit 1: %v, %d", seqs(got), n)
	}
	if got, n := w.Read(1, 0); got != nil || n != 5 {
		t.Fatalf("read after 1 (dropped): %v, %d; want 5 from the store", seqs(got), n)
	}
	if got, n := w.Read(1, 2); got != nil || n != 2 {
		t.Fatalf("read after 1, limit 2: %v, %d", seqs(got), n)
	}
	if got, n := w.Read(6, 0); got != nil || n != 0 {
		t.Fatalf("read at the end: %v, %d", seqs(got), n)
	}

	resumed := New(4, 10) // events 1..10 stored before this process
	if resumed.Last() != 10 {
		t.Fatalf("resumed Last %d", resumed.Last())
	}
	if got, n := resumed.Read(3, 0); got != nil || n != 7 {
		t.Fatalf("resumed read after 3: %v, %d; want 7 from the store", seqs(got), n)
	}
	resumed.Append([]store.Event{{Sequence: 11, JSON: []byte("{}")}})
	if got, n := resumed.Read(10, 0); len(got) != 1 || got[0].Sequence != 11 || n != 0 {
		t.Fatalf("resumed read after 10: %v, %d", seqs(got), n)
	}
}

// Read hands out the window's own events without copying them (every live subscriber reads
// each event once: a copy per read was an allocation per event per subscriber), and what it
// handed out stays as it was read whatever the window does next: appending to it cannot write
// into the window, and later appends and trims of the window do not change it.
func TestWindowReadSharesWithoutCopyingAndStaysStable(t *testing.T) {
	w := New(8, 0)
	all, _ := events(20, 10)
	w.Append(all[:3])
	if allocs := testing.AllocsPerRun(100, func() { w.Read(1, 0) }); allocs != 0 {
		t.Fatalf("Read allocated %.0f times per call; want none", allocs)
	}
	got, _ := w.Read(1, 0)
	if len(got) != 2 || cap(got) != 2 {
		t.Fatalf("read after 1: %v with capacity %d; want [2 3] with no room to append into the window", seqs(got), cap(got))
	}
	_ = append(got, store.Event{Sequence: 99})
	w.Append(all[3:4])
	if after, _ := w.Read(3, 0); len(after) != 1 || after[0].Sequence != 4 {
		t.Fatalf("read after 3, once a reader appended to its read: %v; want [4]", seqs(after))
	}
	w.Append(all[4:20]) // past the limit: trimmed
	if seqs(got)[0] != 2 || seqs(got)[1] != 3 {
		t.Fatalf("a read changed under its reader by later appends: %v", seqs(got))
	}
}
