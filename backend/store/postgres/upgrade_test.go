package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/postgres"
	"github.com/harness-edge/harness-edge/backend/store/storetest"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// schema2Fixture and schema3Fixture hold the rows storetest's upgrade fixture left in a
// database at schema version 2 (the release before 00003) and 3 (the release before the event
// checksums), one INSERT a line, written by TestWriteUpgradeFixture at those releases.
const (
	schema2Fixture = "testdata/schema2.sql"
	schema3Fixture = "testdata/schema3.sql"
)

// fixtureTables are the tables the store writes records into (not the cluster's).
var fixtureTables = []string{"conversations", "executions", "events", "artifacts", "actions", "idempotency",
	"checkpoints", "provider_state", "webhook_outbox", "webhook_failed"}

// TestOpenOlderSchemaDatabases: a database migrated to an older version and holding the rows
// that release wrote is migrated by Open, and every record reads back as it was written.
func TestOpenOlderSchemaDatabases(t *testing.T) {
	for _, c := range []struct {
		version int64
		fixture string
	}{{2, schema2Fixture}, {3, schema3Fixture}} {
		t.Run(c.fixture, func(t *testing.T) {
			dsn := databaseAt(t, c.version, c.fixture)
			for range 2 {
				s := open(t, dsn, "node-a")
				storetest.CheckFixture(t, s)
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			var nullable string
			if err := connect(t, dsn).QueryRow(context.Background(),
				`SELECT is_nullable FROM information_schema.columns WHERE table_name = 'events' AND column_name = 'checksum'`).Scan(&nullable); err != nil || nullable != "NO" {
				t.Fatalf("events.checksum nullable %q, %v; want NOT NULL", nullable, err)
			}
		})
	}
}

// databaseAt is a new database migrated to version, holding the rows of fixture.
func databaseAt(t *testing.T, version int64, fixture string) string {
	t.Helper()
	dsn := newDatabase(t)
	if err := postgres.MigrateTo(context.Background(), dsn, version); err != nil {
		t.Fatal(err)
	}
	rows, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := connect(t, dsn).Exec(context.Background(), string(rows)); err != nil {
		t.Fatalf("load %s: %v", fixture, err)
	}
	return dsn
}

// Issue 34: migration 4 checks every existing event in full, once, before it gives it a
// checksum. A row damaged before the upgrade — a byte changed in the middle of its JSON, a
// byte that is not UTF-8, a type column that is not the type in the JSON — stays undecodable
// after it; every other row is served, checked by its checksum from then on.
func TestMigrationChecksEveryOldEvent(t *testing.T) {
	dsn := databaseAt(t, 3, schema3Fixture)
	conn := connect(t, dsn)
	delta := api.StandardEventTypeOutputTextDelta
	ids := []string{executionID(0xe01), executionID(0xe02), executionID(0xe03), executionID(0xe04)}
	damage := map[string]func(typ *string, raw []byte) []byte{
		ids[1]: func(_ *string, raw []byte) []byte { return bytes.Replace(raw, []byte(`"},`), []byte(`X},`), 1) },
		ids[2]: func(_ *string, raw []byte) []byte { return bytes.Replace(raw, []byte("word"), []byte("w\xffrd"), 1) },
		ids[3]: func(typ *string, raw []byte) []byte { *typ = string(api.StandardEventTypeOutputTextDone); return raw },
	}
	const n = 5
	for _, id := range ids {
		for seq := int64(1); seq <= n; seq++ {
			raw := fmt.Appendf(nil, `{"data":{"text":"word %d"},"executionId":%q,"id":"%s:%d","sequence":%d,"time":"2026-11-01T09:00:00.000Z","type":"output.text.delta"}`,
				seq, id, id, seq, seq)
			typ := string(delta)
			if d := damage[id]; d != nil && seq == n/2+1 {
				raw = d(&typ, raw)
			}
			if _, err := conn.Exec(context.Background(), `INSERT INTO events (execution_id, sequence, data, type) VALUES ($1, $2, $3, $4)`, id, seq, raw, typ); err != nil {
				t.Fatal(err)
			}
		}
	}
	s := open(t, dsn, "node-a")
	storetest.CheckFixture(t, s)
	if events, err := s.Events(ids[0], 0, 0); err != nil || len(events) != n {
		t.Fatalf("the healthy execution: %d events, %v", len(events), err)
	}
	for _, id := range ids[1:] {
		if events, err := s.Events(id, 0, 0); !errors.Is(err, store.ErrUndecodable) {
			t.Errorf("%s: %d events, %v; want ErrUndecodable", id, len(events), err)
		}
		if events, err := s.Events(id, 0, n/2); err != nil || len(events) != n/2 {
			t.Errorf("%s before its damaged event: %d events, %v", id, len(events), err)
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
