package pgtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/harness-edge/harness-edge/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// Each test gets a database of its own on the shared server: what one writes, another never sees.
func TestNewDatabaseIsolatesTests(t *testing.T) {
	c := pgtest.Start(t)
	a, b := c.NewDatabase(t), c.NewDatabase(t)
	if a == b {
		t.Fatalf("two databases share the DSN %s", a)
	}
	ctx := context.Background()
	connA := connect(t, a)
	if _, err := connA.Exec(ctx, "CREATE TABLE mark (v int); INSERT INTO mark VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	var v int
	if err := connA.QueryRow(ctx, "SELECT v FROM mark").Scan(&v); err != nil || v != 42 {
		t.Fatalf("read back: %d, %v", v, err)
	}
	connB := connect(t, b)
	var n int
	if err := connB.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'mark'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("the second database sees the first one's table: %d, %v", n, err)
	}
	if pgtest.Start(t) != c {
		t.Fatal("Start started a second shared server")
	}
}

// A cluster of one's own stops and drops its files at the end of the test, and runs with fsync
// when asked to be durable.
func TestStartClusterDurable(t *testing.T) {
	var c *pgtest.Cluster
	t.Run("own", func(t *testing.T) {
		c = pgtest.StartCluster(t, pgtest.Options{Durable: true})
		conn := connect(t, c.NewDatabase(t))
		var fsync string
		if err := conn.QueryRow(context.Background(), "SHOW fsync").Scan(&fsync); err != nil || fsync != "on" {
			t.Fatalf("fsync = %q, %v; want on", fsync, err)
		}
	})
	if _, err := pgx.Connect(context.Background(), c.DSN("postgres")); err == nil {
		t.Fatal("the cluster still accepts connections after its test ended")
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

// Pause stalls every query (the connection stays open) until Resume; after Crash nothing
// answers, and Restart serves the same data on the same port (WAL replayed). Durable: without
// synchronous commit a commit acknowledged just before a crash may be lost, by design.
func TestPauseCrashRestart(t *testing.T) {
	c := pgtest.StartCluster(t, pgtest.Options{Durable: true})
	dsn := c.NewDatabase(t)
	conn := connect(t, dsn)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, "CREATE TABLE mark (v int); INSERT INTO mark VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	if err := c.Pause(); err != nil {
		t.Fatal(err)
	}
	stalled, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err := conn.Exec(stalled, "SELECT 1")
	cancel()
	if err == nil {
		t.Fatal("a query answered while the server was paused")
	}
	if err := c.Resume(); err != nil {
		t.Fatal(err)
	}
	after := connect(t, dsn) // the cancelled query closed the first connection
	if _, err := after.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatalf("after Resume: %v", err)
	}
	if err := c.Crash(); err != nil {
		t.Fatal(err)
	}
	if _, err := after.Exec(ctx, "SELECT 1"); err == nil {
		t.Fatal("a query answered after Crash")
	}
	if err := c.Restart(); err != nil {
		t.Fatal(err)
	}
	var v int
	if err := connect(t, dsn).QueryRow(ctx, "SELECT v FROM mark").Scan(&v); err != nil || v != 7 {
		t.Fatalf("after Restart: %d, %v; want the row written before the crash", v, err)
	}
}
