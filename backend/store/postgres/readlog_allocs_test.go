package postgres_test

import (
	"context"
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/postgres"
	"github.com/harness-edge/harness-edge/internal/pgtest"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The hub reads the stream log after commits (ReadLog): an entry costs the values it hands
// out (the execution id, type, scope strings and the event's JSON) and no box of its own per
// column. Measured as the difference between a page of 101 entries and a page of 1, so the
// query's own allocations do not count.
func TestReadLogAllocatesOnlyTheValuesPerEntry(t *testing.T) {
	s, err := postgres.Open(context.Background(), postgres.Config{DSN: pgtest.StartCluster(t, pgtest.Options{}).NewDatabase(t), Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	rec := execution(1, api.ExecutionStateRunning, "n1")
	commit(t, s, &store.Batch{Executions: []store.Execution{rec}})
	scope := &store.StreamScope{Tenant: "tenant-a", ConversationID: conversationID(1), ProviderID: "mock"}
	var batch store.Batch
	for seq := int64(1); seq <= 101; seq++ {
		e := event(rec.Execution.ID, seq, api.StandardEventTypeOutputTextDelta)
		e.Scope = scope
		batch.Events = append(batch.Events, e)
	}
	commit(t, s, &batch)
	allocs := func(limit int) float64 {
		return testing.AllocsPerRun(10, func() {
			page, err := s.ReadLog(store.LogQuery{Tenant: "tenant-a", Limit: limit})
			if err != nil || len(page.Entries) != limit {
				t.Fatalf("read %d entries, %v; want %d", len(page.Entries), err, limit)
			}
		})
	}
	perEntry := (allocs(101) - allocs(1)) / 100
	// The values: execution id, type, tenant, conversation and provider strings and the JSON
	// (6), and the type's bytes for the checksum check (store.EventOf); the page's slice grows
	// too, under one allocation per entry amortised.
	const values = 7
	t.Logf("%.2f allocations per entry", perEntry)
	if perEntry >= values+0.5 {
		t.Errorf("ReadLog allocates %.1f per entry, beyond the %d its values need", perEntry, values)
	}
}
