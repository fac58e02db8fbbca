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

// Keys a client or a provider chooses may hold any character: NUL (provider state keys are
// "provider id, 0x00, key"), non-ASCII, quotes. They round-trip exactly and stay distinct.
func TestKeysWithAnyCharacter(t *testing.T) {
	s := open(t, newDatabase(t), "a")
	keys := []string{"k\x00nul", "k", "ключ \"'\\", "k\x00"}
	var b store.Batch
	for i, k := range keys {
		b.Idempotency = append(b.Idempotency, store.Idempotency{ConversationID: conversationID(1), Key: k, Fingerprint: k, ExecutionID: executionID(i + 1)})
		b.ProviderState = append(b.ProviderState, store.ProviderState{Key: "mock\x00" + k, Value: []byte(k)})
	}
	commit(t, s, &b)
	for i, k := range keys {
		rec, found, err := s.Idempotency("", conversationID(1), k)
		if err != nil || !found || rec.Key != k || rec.ExecutionID != executionID(i+1) {
			t.Errorf("Idempotency(%q) = %+v, %v, %v", k, rec, found, err)
		}
		v, found, err := s.ProviderState("mock\x00" + k)
		if err != nil || !found || string(v) != k {
			t.Errorf("ProviderState(%q) = %q, %v, %v", k, v, found, err)
		}
	}
}
