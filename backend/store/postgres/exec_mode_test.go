package postgres_test

import (
	"context"
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/postgres"
	"github.com/harness-edge/harness-edge/internal/pgtest"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The batch inserts send typed arrays (arrays.go). Where pgx does not learn the parameters'
// types from a prepared statement (default_query_exec_mode exec or simple_protocol, as a
// transaction-mode pooler needs), it must still send them as the arrays they are: the events
// and their stream-log entries read back as written.
func TestEventsWrittenWithoutPreparedStatements(t *testing.T) {
	cluster := pgtest.StartCluster(t, pgtest.Options{})
	for _, mode := range []string{"exec", "simple_protocol"} {
		t.Run(mode, func(t *testing.T) {
			s, err := postgres.Open(context.Background(), postgres.Config{
				DSN: cluster.NewDatabase(t) + "&default_query_exec_mode=" + mode, Node: "n1"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			rec := execution(1, api.ExecutionStateRunning, "n1")
			id := rec.Execution.ID
			commit(t, s, &store.Batch{Executions: []store.Execution{rec}})
			scope := &store.StreamScope{Tenant: "tenant-a", ConversationID: conversationID(1), ProviderID: "mock"}
			var batch store.Batch
			for seq := int64(1); seq <= 300; seq++ { // past 255, which Go boxes without allocating
				e := event(id, seq, api.StandardEventTypeOutputTextDelta)
				e.Scope = scope
				batch.Events = append(batch.Events, e)
			}
			commit(t, s, &batch)
			got, err := s.Events(id, 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(batch.Events) {
				t.Fatalf("read %d events, wrote %d", len(got), len(batch.Events))
			}
			for i, e := range got {
				if want := batch.Events[i].Event; e.Sequence != want.Sequence || e.Type != want.Type || string(e.JSON) != string(want.JSON) {
					t.Fatalf("event %d read back as %d %s %s, written %d %s %s", i, e.Sequence, e.Type, e.JSON, want.Sequence, want.Type, want.JSON)
				}
			}
			page, err := s.ReadLog(store.LogQuery{Tenant: "tenant-a", Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Entries) != len(batch.Events) {
				t.Fatalf("the stream log has %d entries, %d events were written", len(page.Entries), len(batch.Events))
			}
			last := page.Entries[len(page.Entries)-1]
			if last.ExecutionID != id || last.Event.Sequence != 300 || last.Scope != *scope {
				t.Fatalf("the last log entry is %s #%d %+v", last.ExecutionID, last.Event.Sequence, last.Scope)
			}
		})
	}
}
