package bolt_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/bolt"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// journalCount is how many entries the index journal of the closed store in dir holds.
func journalCount(t *testing.T, dir string) int {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(dir, bolt.FileName), 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n := 0
	db.View(func(tx *bbolt.Tx) error {
		n = tx.Bucket([]byte("index_journal")).Stats().KeyN
		return nil
	})
	return n
}

func startBatch(n int, conv string) *store.Batch {
	id := fmt.Sprintf("exec_%032x", n)
	key := fmt.Sprintf("key-%d", n)
	at := time.Date(2026, 12, 1, 0, 0, n, 0, time.UTC).Format("2006-01-02T15:04:05.000Z")
	return &store.Batch{
		Executions: []store.Execution{{Execution: api.Execution{ID: id, ConversationID: conv, ProviderID: "mock", State: api.ExecutionStateQueued,
			RequiredCapabilities: []string{}, EffectiveConfig: api.JSONObject{}, CreatedAt: at, UpdatedAt: at}, IdempotencyKey: &key}},
		Idempotency: []store.Idempotency{{ConversationID: conv, Key: key, Fingerprint: "f", ExecutionID: id}},
	}
}

// Idempotency records and conversation entries still in the journal when the store closes
// are there after a reopen: a second record for a key is refused (exactly once across
// restarts), the first is found, and the conversation's listing names every execution, from
// the journal and from its bucket, after any number of folds.
func TestIndexJournalSurvivesRestartsAndFolds(t *testing.T) {
	dir := t.TempDir()
	const conv = "conv_0123456789abcdef0123456789abcdef"
	const limit = 5
	n := 0
	for round := range 3 {
		s, err := bolt.Open(dir, bolt.Options{IndexJournalLimit: limit})
		if err != nil {
			t.Fatal(err)
		}
		for range 3 + round {
			n++
			if err := s.Commit(startBatch(n, conv)); err != nil {
				t.Fatal(err)
			}
		}
		for i := 1; i <= n; i++ {
			dup := startBatch(i, conv)
			dup.Executions = nil
			dup.Idempotency[0].ExecutionID = "exec_other"
			if err := s.Commit(dup); !errors.Is(err, store.ErrConflict) {
				t.Fatalf("round %d: a second record for key %d: %v", round, i, err)
			}
			rec, found, err := s.Idempotency("", conv, fmt.Sprintf("key-%d", i))
			if err != nil || !found || rec.ExecutionID != fmt.Sprintf("exec_%032x", i) {
				t.Fatalf("round %d: record %d: %+v %v %v", round, i, rec, found, err)
			}
		}
		page, _, err := s.ListExecutions(store.ListQuery{ConversationID: conv, Limit: 100})
		if err != nil || len(page) != n {
			t.Fatalf("round %d: listing holds %d of %d (%v)", round, len(page), n, err)
		}
		for i, rec := range page {
			if want := fmt.Sprintf("exec_%032x", n-i); rec.Execution.ID != want {
				t.Fatalf("round %d: listing[%d] = %s, want %s", round, i, rec.Execution.ID, want)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		// Two entries per start; a fold happens once limit entries wait, at the next commit.
		if got := journalCount(t, dir); got == 0 || got > limit+1 {
			t.Fatalf("round %d: the journal holds %d entries (limit %d)", round, got, limit)
		}
	}
}

// A deletion finds the entries its own transaction put in the journal: an execution created
// and deleted by one batch leaves no idempotency record and no listing entry behind.
func TestDeletionInTheSameBatchAsTheJournalEntries(t *testing.T) {
	s, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const conv = "conv_0123456789abcdef0123456789abcdef"
	if err := s.Commit(startBatch(1, conv)); err != nil {
		t.Fatal(err)
	}
	b := startBatch(2, conv)
	b.Deletions = b.Executions
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	if _, found, err := s.Idempotency("", conv, "key-2"); err != nil || found {
		t.Fatalf("the deleted execution's idempotency record: found %v, %v", found, err)
	}
	page, _, err := s.ListExecutions(store.ListQuery{ConversationID: conv, Limit: 10})
	if err != nil || len(page) != 1 || page[0].Execution.ID != fmt.Sprintf("exec_%032x", 1) {
		t.Fatalf("listing after the deletion: %d records, %v", len(page), err)
	}
}
