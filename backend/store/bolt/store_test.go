package bolt_test

import (
	"errors"
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/bolt"
	"github.com/harness-edge/harness-edge/backend/store/storetest"
)

// The contract suite, on a real bbolt file.
func TestStoreContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := bolt.Open(t.TempDir(), bolt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// The contract again with an index journal folded every second entry: every path through the
// journal (in memory, folded, both at once in a listing) meets the same contract.
func TestStoreContractWithFrequentFolds(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := bolt.Open(t.TempDir(), bolt.Options{IndexJournalLimit: 2, StreamIndexFold: 3})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// A store file held by another opener (here a second Open in this process: bbolt's flock is
// per open file) fails after the lock timeout with an error matching store.ErrLocked, which is
// what Caddy's pool looks for to defer the open to the first request.
func TestOpenLockedStore(t *testing.T) {
	dir := t.TempDir()
	s, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	second, err := bolt.Open(dir, bolt.Options{})
	if err == nil {
		second.Close()
		t.Fatal("a second Open of a held store succeeded")
	}
	if !errors.Is(err, store.ErrLocked) || errors.Is(err, store.ErrDamaged) {
		t.Fatalf("second Open: %v; want ErrLocked (and not ErrDamaged)", err)
	}
}

// BenchmarkReadEvents: the read path of an execution's log from the bbolt file (`go test -run
// '^$' -bench ReadEvents ./backend/store/bolt/`; docs/operations.md, "A record that cannot be
// decoded").
func BenchmarkReadEvents(b *testing.B) {
	s, err := bolt.Open(b.TempDir(), bolt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.BenchReadEvents(b, s)
}
