package main

import (
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/internal/pgtest"
	"github.com/harness-edge/harness-edge/internal/seed"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// The seeder writes what it says, readable through the store API, in both stores: every
// execution with its 7 events and its idempotency record, in conversations of perConv.
func TestSeedWritesReadableExecutions(t *testing.T) {
	for _, c := range []struct {
		name         string
		dataDir, dsn func(t *testing.T) string
	}{
		{"bolt", func(t *testing.T) string { return t.TempDir() }, func(*testing.T) string { return "" }},
		{"postgres", func(*testing.T) string { return "" }, func(t *testing.T) string { return pgtest.Start(t).NewDatabase(t) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := openStore(c.dataDir(t), c.dsn(t))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// 40 in one commit: 280 events, which the PostgreSQL store sends by COPY.
			lastConv, err := seed.Write(s, 40, 10, 40, nil)
			if err != nil {
				t.Fatal(err)
			}
			var recs []store.Execution
			if err := s.ForEachExecution(func(r store.Execution) bool { recs = append(recs, r); return true },
				func(id string, err error) { t.Errorf("undecodable %s: %v", id, err) }); err != nil {
				t.Fatal(err)
			}
			if len(recs) != 40 {
				t.Fatalf("%d executions stored, want 40", len(recs))
			}
			for _, r := range recs {
				events, err := s.Events(r.Execution.ID, 0, 0)
				if err != nil || len(events) != 7 || !events[6].Terminal() {
					t.Fatalf("events of %s: %d, %v", r.Execution.ID, len(events), err)
				}
				idem, found, err := s.Idempotency("", r.Execution.ConversationID, *r.IdempotencyKey)
				if err != nil || !found || idem.ExecutionID != r.Execution.ID {
					t.Fatalf("idempotency record of %s: %+v, %v, %v", r.Execution.ID, idem, found, err)
				}
			}
			page, _, err := s.ListExecutions(store.ListQuery{ConversationID: lastConv, Limit: 20})
			if err != nil || len(page) != 10 {
				t.Fatalf("the last conversation lists %d executions (want 10): %v", len(page), err)
			}
			if _, _, err := timeList(s, store.ListQuery{Limit: 20}, 3); err != nil {
				t.Fatal(err)
			}
		})
	}
}
