package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/postgres"
	"github.com/harness-edge/harness-edge/backend/store/storetest"
)

// The erasure's contract, with every table of the schema queried after it.
func TestErasure(t *testing.T) {
	var mu sync.Mutex
	dsns := map[store.Store]string{}
	storetest.Erasure(t, func(t *testing.T) store.Store {
		dsn := newDatabase(t)
		s := open(t, dsn, "node-a")
		mu.Lock()
		dsns[s] = dsn
		mu.Unlock()
		return s
	}, func(t *testing.T, s store.Store, conv string, ids []string) []string {
		mu.Lock()
		dsn := dsns[s]
		mu.Unlock()
		return tableTraces(t, dsn, conv, ids)
	})
}

// allowed is, per table, what an erasure keeps of conversation $1 on purpose.
var allowed = map[string]string{
	"conversation_tombstones": `conversation_id = $1`,
	"stream_log":              `execution_id = '' AND conversation_id = $1`, // the marker
	"webhook_outbox":          `execution_id = $1`,                          // the rows announcing the erasure
}

// tableTraces reads every row of every table of the store's schema (information_schema) as
// text — bytea columns with encode(…, 'escape'), so an id among a key's bytes is found too —
// for the conversation's id or one of ids.
func tableTraces(t *testing.T, dsn, conv string, ids []string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_name, column_name, data_type FROM information_schema.columns
		WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`)
	if err != nil {
		t.Fatal(err)
	}
	columns := map[string][]string{}
	var tables []string
	for rows.Next() {
		var table, column, typ string
		if err := rows.Scan(&table, &column, &typ); err != nil {
			t.Fatal(err)
		}
		expr := pgx.Identifier{column}.Sanitize() + "::text"
		if typ == "bytea" {
			expr = "encode(" + pgx.Identifier{column}.Sanitize() + ", 'escape')"
		}
		if columns[table] == nil {
			tables = append(tables, table)
		}
		columns[table] = append(columns[table], expr)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(tables) < 15 {
		t.Fatalf("the schema has %d tables (%v): not the store's", len(tables), tables)
	}
	var found []string
	for _, table := range tables {
		text := "concat_ws('|', " + strings.Join(columns[table], ", ") + ")"
		keep := "$1::text IS NULL" // nothing (and $1 typed)
		if a, ok := allowed[table]; ok {
			keep = a
		}
		for _, id := range append([]string{conv}, ids...) {
			sql := fmt.Sprintf(`SELECT %s FROM %s WHERE strpos(%s, $2) > 0 AND NOT (%s)`, text, pgx.Identifier{table}.Sanitize(), text, keep)
			rows, err := conn.Query(ctx, sql, conv, id)
			if err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
			for rows.Next() {
				var row string
				if err := rows.Scan(&row); err != nil {
					t.Fatal(err)
				}
				found = append(found, fmt.Sprintf("table %s holds %s: %s", table, id, row))
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return found
}

// Two nodes on one database: one erases conversations while the other starts executions in
// them. The database decides each round (row locks, migrations/00012), and afterwards no row
// of an erased conversation is left, by query.
func TestErasureRacingStartsOnTwoNodes(t *testing.T) {
	dsn := newDatabase(t)
	a, b := open(t, dsn, "a"), open(t, dsn, "b")
	starts, erasures := storetest.ErasureRace(t, a, b, 60)
	if starts+erasures != 60 {
		t.Fatalf("%d rounds decided, want 60", starts+erasures)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for what, sql := range map[string]string{
		"executions of erased conversations": `SELECT count(*) FROM executions x JOIN conversation_tombstones t ON t.conversation_id = x.conversation_id`,
		"events without their execution":     `SELECT count(*) FROM events e WHERE NOT EXISTS (SELECT 1 FROM executions x WHERE x.id = e.execution_id)`,
		"log entries of erased conversations": `SELECT count(*) FROM stream_log l JOIN conversation_tombstones t ON t.conversation_id = l.conversation_id
			WHERE l.execution_id <> ''`,
		"erased conversations with a record": `SELECT count(*) FROM conversations c JOIN conversation_tombstones t ON t.conversation_id = c.id`,
	} {
		var n int
		if err := conn.QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%s: %d", what, n)
		}
	}
	var tombs, markers int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM conversation_tombstones), (SELECT count(*) FROM stream_log WHERE execution_id = '')`).Scan(&tombs, &markers); err != nil {
		t.Fatal(err)
	}
	if tombs != erasures || markers != erasures {
		t.Errorf("%d tombstones and %d markers for %d erasures", tombs, markers, erasures)
	}
}

var _ store.ErasureReader = (*postgres.Store)(nil)

// The seal's contract, and a seal committed on one node refusing a start on another.
func TestSeal(t *testing.T) {
	storetest.Seal(t, func(t *testing.T) store.Store { return open(t, newDatabase(t), "node-a") })
}

func TestSealAcrossNodes(t *testing.T) {
	dsn := newDatabase(t)
	storetest.SealAcross(t, open(t, dsn, "a"), open(t, dsn, "b"))
}

// One node seals conversations while the other starts executions in them: the row lock of
// 00012, taken FOR UPDATE by the seal (00013), decides each round.
func TestSealRacingStartsOnTwoNodes(t *testing.T) {
	dsn := newDatabase(t)
	starts, seals := storetest.SealRace(t, open(t, dsn, "a"), open(t, dsn, "b"), 60)
	t.Logf("starts first: %d, seals first: %d", starts, seals)
}
