package postgres_test

import (
	"context"
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/postgres"
	"github.com/harness-edge/harness-edge/backend/store/storetest"
	"github.com/harness-edge/harness-edge/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// newDatabase is a fresh database on the test binary's shared PostgreSQL.
func newDatabase(t testing.TB) string {
	t.Helper()
	return pgtest.Start(t).NewDatabase(t)
}

// open opens a store on dsn as node, closed when t ends (Close twice is harmless).
func open(t testing.TB, dsn, node string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), postgres.Config{DSN: dsn, Node: node, LogError: func(err error) { t.Logf("store %s: %v", node, err) }})
	if err != nil {
		t.Fatalf("Open %s: %v", node, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// The contract suite, each test on a database of its own.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return open(t, newDatabase(t), "node-a") })
}
