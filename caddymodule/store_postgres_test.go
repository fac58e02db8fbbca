package caddymodule

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/jackc/pgx/v5"

	"github.com/harness-edge/harness-edge/internal/pgtest"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// `store postgres <dsn>` and the block form adapt to harness.stores.postgres.
func TestAdaptPostgresStore(t *testing.T) {
	want := func(store string) string {
		return `{"apps":{"http":{"servers":{"srv0":{"listen":[":4310"],"routes":[{"handle":[{"handler":"harness","store":` + store + `}]}]}}}}}`
	}
	for name, tc := range map[string]struct{ body, store string }{
		"shorthand": {"store postgres postgres://h@db/harness", `{"backend":"postgres","dsn":"postgres://h@db/harness"}`},
		"block": {"store postgres {\n dsn {env.HARNESS_DATABASE_URL}\n node {env.HARNESS_NODE}\n lease 5s\n timeout 2s\n }",
			`{"backend":"postgres","dsn":"{env.HARNESS_DATABASE_URL}","lease":5000000000,"node":"{env.HARNESS_NODE}","timeout":2000000000}`},
		"listen_dsn": {"store postgres {\n dsn postgres://h@pool/harness\n listen_dsn postgres://h@db/harness\n }",
			`{"backend":"postgres","dsn":"postgres://h@pool/harness","listen_dsn":"postgres://h@db/harness"}`},
	} {
		t.Run(name, func(t *testing.T) {
			cfg, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(":4310 {\nharness {\n"+tc.body+"\n}\n}\n"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if string(cfg) != want(tc.store) {
				t.Fatalf("adapted to\n%s\nwant\n%s", cfg, want(tc.store))
			}
		})
	}
	for name, tc := range map[string]struct{ body, want string }{
		"unknown setting": {"store postgres {\n host db\n }", `unrecognized store postgres setting "host"`},
		"dsn twice":       {"store postgres postgres://a {\n dsn postgres://b\n }", "dsn given twice"},
		"bad lease":       {"store postgres {\n lease soon\n }", `lease "soon"`},
		"bad timeout":     {"store postgres {\n timeout later\n }", `timeout "later"`},
		"two args":        {"store postgres a b", "wrong argument count"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(":4310 {\nharness {\n"+tc.body+"\n}\n}\n"), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Adapt: %v; want an error containing %q", err, tc.want)
			}
		})
	}
}

// The store's identity names the database and the node, never the password (it shows in logs
// and admin answers); placeholders are replaced; a missing dsn is refused.
func TestPostgresStoreProvision(t *testing.T) {
	t.Setenv("HARNESS_TEST_DSN", "postgres://harness:s3cret@db.internal:6432/runs?sslmode=disable")
	p := &PostgresStore{DSN: "{env.HARNESS_TEST_DSN}", Node: "node-a"}
	if err := p.Provision(caddy.Context{}); err != nil {
		t.Fatal(err)
	}
	if got, want := p.StoreKey(), "postgres://harness@db.internal:6432/runs#node-a"; got != want {
		t.Fatalf("StoreKey = %q, want %q", got, want)
	}
	if p.LeaseDuration() != DefaultLease {
		t.Fatalf("lease %s, want the default %s", p.LeaseDuration(), DefaultLease)
	}
	if p.StoreTimeout() != 5*time.Second {
		t.Fatalf("timeout %s, want the default 5s", p.StoreTimeout())
	}
	if err := (&PostgresStore{Node: "n"}).Provision(caddy.Context{}); err == nil || !strings.Contains(err.Error(), "dsn is required") {
		t.Fatalf("Provision without a dsn: %v", err)
	}
	// listen_dsn: an unset variable means "use dsn"; a malformed one is refused at Provision.
	unset := &PostgresStore{DSN: "{env.HARNESS_TEST_DSN}", ListenDSN: "{env.HARNESS_TEST_UNSET_LISTEN_DSN}", Node: "n"}
	if err := unset.Provision(caddy.Context{}); err != nil || unset.listenDSN != "" {
		t.Fatalf("Provision with an unset listen_dsn: %v, listen dsn %q", err, unset.listenDSN)
	}
	bad := &PostgresStore{DSN: "{env.HARNESS_TEST_DSN}", ListenDSN: "postgres://h@db:notaport/x", Node: "n"}
	if err := bad.Provision(caddy.Context{}); err == nil || !strings.Contains(err.Error(), "listen_dsn") {
		t.Fatalf("Provision with a malformed listen_dsn: %v", err)
	}
}

// A handler on `store postgres` serves the protocol from a real PostgreSQL: the execution it
// runs is a row owned by the node the Caddyfile names.
func TestPostgresStoreServes(t *testing.T) {
	dsn := pgtest.StartCluster(t, pgtest.Options{}).NewDatabase(t)
	loadCaddyfile(t, fmt.Sprintf(`
http://localhost:9080 {
	harness {
		store postgres {
			dsn %s
			node node-a
		}
		provider mock
	}
}
`, dsn))
	c := newClient(t, httpURL, nil)
	conv := c.createConversation()
	exec := c.startExecution(api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "hello"})
	deadline := time.Now().Add(30 * time.Second)
	for !terminalState(c.execution(exec.ID).State) {
		if time.Now().After(deadline) {
			t.Fatalf("execution %s did not finish", exec.ID)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if events := c.events(exec.ID, 0); len(events) < 2 {
		t.Fatalf("%d events", len(events))
	}
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var owner string
	var events int
	if err := conn.QueryRow(context.Background(), `SELECT owner, (SELECT count(*) FROM events WHERE execution_id = $1) FROM executions WHERE id = $1`, exec.ID).Scan(&owner, &events); err != nil {
		t.Fatal(err)
	}
	if owner != "node-a" || events < 2 {
		t.Fatalf("row: owner %q, %d events; want node-a and the events", owner, events)
	}
}

func terminalState(s api.ExecutionState) bool {
	return s == api.ExecutionStateSucceeded || s == api.ExecutionStateFailed || s == api.ExecutionStateCancelled
}
