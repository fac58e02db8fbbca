package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/store/postgres"
)

// ListenDSN is where the LISTEN session connects: a store whose ListenDSN reaches nothing does
// not open (it waits for its first LISTEN), and one whose ListenDSN is the pool's DSN does.
func TestListenDSNIsTheListenersConnection(t *testing.T) {
	dsn := newDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	closed := "postgres://postgres@127.0.0.1:1/nowhere?sslmode=disable&connect_timeout=1"
	if s, err := postgres.Open(ctx, postgres.Config{DSN: dsn, ListenDSN: closed, Node: "a"}); err == nil {
		s.Close()
		t.Fatal("Open succeeded with a listen_dsn that reaches no server: the listener does not use it")
	} else if !strings.Contains(err.Error(), "listen") {
		t.Fatalf("Open with an unreachable listen_dsn: %v, want a listen error", err)
	}
	s, err := postgres.Open(context.Background(), postgres.Config{DSN: dsn, ListenDSN: dsn, Node: "a"})
	if err != nil {
		t.Fatalf("Open with listen_dsn = dsn: %v", err)
	}
	s.Close()
}
