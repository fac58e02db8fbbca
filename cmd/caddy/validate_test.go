package main

import (
	"context"
	"errors"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// TestValidateLeavesTheLiveNodeAlone is what an operator does before every reload: `caddy
// validate` of the running node's own configuration, same HARNESS_NODE, while the node runs an
// execution. Provisioning must have no side effect on the cluster (issue 44, item 2): validate
// takes no lease epoch (which fenced the live node and failed its execution "Runtime restarted
// before the execution finished"), registers no node row under another name, and runs no
// migrations on an empty database; a reload keeps the node's runtime and lease.
func TestValidateLeavesTheLiveNodeAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary and PostgreSQL; run without -short")
	}
	dsn := clusterDatabase(t)
	bin := buildCaddy(t)
	as := unprivilegedUser(t, bin)
	db := connectDatabase(t, dsn)

	in := newExampleInstance(t, bin, as)
	in.plain("mock")
	in.env = append(in.env, "HARNESS_DATABASE_URL="+dsn, "HARNESS_NODE=a", "HARNESS_LEASE=10s")

	t.Run("validate against an empty database creates no table", func(t *testing.T) {
		validateExample(t, in, clusterCaddyfile)
		if n := countTables(t, db); n != 0 {
			t.Fatalf("after caddy validate the empty database has %d tables, want none (validate ran the migrations)", n)
		}
	})

	in.start(clusterCaddyfile)
	epoch := nodeEpoch(t, db, "a")

	// An execution in flight on the node: 80 words, 100 ms apart.
	x, _ := startExecution(t, in.base, strings.Repeat("in flight ", 40), map[string]any{"delayMs": 100})

	t.Run("validate with the node's own name takes no epoch", func(t *testing.T) {
		validateExample(t, in, clusterCaddyfile)
		if got := nodeEpoch(t, db, "a"); got != epoch {
			t.Fatalf("node a's lease epoch went from %d to %d under caddy validate: the live node is fenced", epoch, got)
		}
	})

	t.Run("validate with another node name registers no node", func(t *testing.T) {
		other := *in
		other.env = append(append([]string(nil), in.env...), "HARNESS_NODE=validating")
		validateExample(t, &other, clusterCaddyfile)
		var n int
		if err := db.QueryRow(t.Context(), `SELECT count(*) FROM nodes WHERE name = 'validating'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatal("caddy validate with HARNESS_NODE=validating registered a node row, which a live node later claims")
		}
	})

	t.Run("the execution in flight during validate succeeds", func(t *testing.T) {
		if state := executionState(t, in.base, x.ID); state == api.ExecutionStateFailed || state == api.ExecutionStateCancelled {
			t.Fatalf("right after the validations the execution is %s, want it still running (or succeeded)", state)
		}
		final := waitTerminal(t, in.base, x.ID)
		if final.State != api.ExecutionStateSucceeded {
			t.Fatalf("the execution in flight during caddy validate ended %s: %+v", final.State, final.Error)
		}
	})

	t.Run("a reload keeps the node's lease", func(t *testing.T) {
		abs, err := filepath.Abs(clusterCaddyfile)
		if err != nil {
			t.Fatal(err)
		}
		out, err := caddyCommand(in, "reload", "--config", abs, "--adapter", "caddyfile", "--address", in.admin, "--force").CombinedOutput()
		if err != nil {
			t.Fatalf("caddy reload: %v\n%s", err, out)
		}
		if got := nodeEpoch(t, db, "a"); got != epoch {
			t.Fatalf("node a's lease epoch went from %d to %d across a reload", epoch, got)
		}
		y, _ := startExecution(t, in.base, "after the reload", map[string]any{})
		if final := waitTerminal(t, in.base, y.ID); final.State != api.ExecutionStateSucceeded {
			t.Fatalf("an execution after the reload ended %s: %+v", final.State, final.Error)
		}
	})
}

// caddyCommand is the binary with args, run as the example's user in its directory and
// environment.
func caddyCommand(in *exampleInstance, args ...string) *exec.Cmd {
	cmd := exec.Command(in.bin, args...)
	cmd.Env, cmd.Dir = in.env, in.dir
	if in.as != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: in.as}
	}
	return cmd
}

// validateExample runs `caddy validate` on caddyfile with the instance's environment and
// requires it to pass; it returns what validate printed.
func validateExample(t *testing.T, in *exampleInstance, caddyfile string) string {
	t.Helper()
	abs, err := filepath.Abs(caddyfile)
	if err != nil {
		t.Fatal(err)
	}
	out, err := caddyCommand(in, "validate", "--config", abs, "--adapter", "caddyfile").CombinedOutput()
	if err != nil {
		t.Fatalf("caddy validate: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "Valid configuration") {
		t.Fatalf("caddy validate did not say the configuration is valid:\n%s", out)
	}
	return string(out)
}

// connectDatabase opens one connection to dsn for the test to inspect the nodes table.
func connectDatabase(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// countTables counts the tables in the database's public schema.
func countTables(t *testing.T, db *pgx.Conn) int {
	t.Helper()
	var n int
	err := db.QueryRow(t.Context(), `SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// nodeEpoch is the lease epoch of the node's row.
func nodeEpoch(t *testing.T, db *pgx.Conn, node string) int64 {
	t.Helper()
	var epoch int64
	err := db.QueryRow(t.Context(), `SELECT epoch FROM nodes WHERE name = $1`, node).Scan(&epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		t.Fatalf("node %s has no row in nodes", node)
	}
	if err != nil {
		t.Fatal(err)
	}
	return epoch
}

// executionState is the execution's state as GET /v1/executions/{id} answers it.
func executionState(t *testing.T, base, id string) api.ExecutionState {
	t.Helper()
	x, err := must(t, http.MethodGet, base+"/v1/executions/"+id, nil, http.StatusOK).execution()
	if err != nil {
		t.Fatal(err)
	}
	return x.State
}

// waitTerminal polls the execution until it is terminal.
func waitTerminal(t *testing.T, base, id string) api.Execution {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // only keeps a stuck execution from hanging the run
	for time.Now().Before(deadline) {
		x, err := must(t, http.MethodGet, base+"/v1/executions/"+id, nil, http.StatusOK).execution()
		if err != nil {
			t.Fatal(err)
		}
		switch x.State {
		case api.ExecutionStateSucceeded, api.ExecutionStateFailed, api.ExecutionStateCancelled:
			return x
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("execution %s did not finish within a minute", id)
	return api.Execution{}
}
