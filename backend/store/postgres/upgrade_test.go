package postgres_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/harness-edge/harness-edge/backend/store/postgres"
	"github.com/harness-edge/harness-edge/backend/store/storetest"
)

// schema2Fixture holds the rows storetest's upgrade fixture left in a database at schema
// version 2 (the release before 00003), one INSERT a line, written by TestWriteUpgradeFixture.
const schema2Fixture = "testdata/schema2.sql"

// fixtureTables are the tables the store writes records into (not the cluster's).
var fixtureTables = []string{"conversations", "executions", "events", "artifacts", "actions", "idempotency",
	"checkpoints", "provider_state", "webhook_outbox", "webhook_failed"}

// TestOpenSchema2Database: a database migrated to version 2 and holding the rows the previous
// release wrote is migrated by Open, and every record reads back as it was written.
func TestOpenSchema2Database(t *testing.T) {
	dsn := newDatabase(t)
	if err := postgres.MigrateTo(context.Background(), dsn, 2); err != nil {
		t.Fatal(err)
	}
	rows, err := os.ReadFile(schema2Fixture)
	if err != nil {
		t.Fatal(err)
	}
	conn := connect(t, dsn)
	if _, err := conn.Exec(context.Background(), string(rows)); err != nil {
		t.Fatalf("load %s: %v", schema2Fixture, err)
	}
	for range 2 {
		s := open(t, dsn, "node-a")
		storetest.CheckFixture(t, s)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
