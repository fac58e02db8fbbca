//go:build fixture

package postgres_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/harness-edge/harness-edge/backend/store/storetest"
)

// TestWriteUpgradeFixture records the fixture's rows as the code it runs writes them: set
// HARNESS_WRITE_FIXTURE to the file to write. It is how testdata/schema2.sql was made.
func TestWriteUpgradeFixture(t *testing.T) {
	out := os.Getenv("HARNESS_WRITE_FIXTURE")
	if out == "" {
		t.Fatal("set HARNESS_WRITE_FIXTURE to the file to write (docs/storage.md)")
	}
	dsn := newDatabase(t)
	s := open(t, dsn, "node-a")
	storetest.WriteFixture(t, s)
	storetest.CheckFixture(t, s)
	conn := connect(t, dsn)
	var b strings.Builder
	for _, table := range fixtureTables {
		rows, err := conn.Query(context.Background(),
			`SELECT format('INSERT INTO %I SELECT (%L::%I).*;', $1::text, t::text, $1::text)
			 FROM `+table+` t ORDER BY 1`, table)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
	}
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
