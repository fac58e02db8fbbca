package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// The ACP conversation root as an operator meets it through the binary (docs/acp.md "Working
// directories"). The agent is /bin/true: nothing here needs one to answer, since every refusal
// comes before an agent is started.

// workspaceEnv is the environment of a server whose ACP provider keeps its conversations in root.
func workspaceEnv(t *testing.T, root string) []string {
	t.Helper()
	dir := t.TempDir()
	return append(instanceEnv(t),
		"ACP_NODE=/bin/true", "ACP_AGENT=agent", "ACP_TS_SDK=none", "ACP_CONTINUITY=none",
		"ACP_SESSIONS="+dir, "ACP_CONVERSATIONS="+root, "ACP_AGENT_LOG="+filepath.Join(dir, "agent.log"),
		"ACP_IDLE_TIMEOUT=1m")
}

// A root owned by another user: `caddy run` refuses to start and says which root and whose it is.
func TestBinaryACPRefusesAForeignConversationRoot(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	if os.Geteuid() != 0 {
		t.Skipf("giving the root to uid 65534 needs root; this test runs as uid %d", os.Geteuid())
	}
	bin := buildCaddy(t)
	root := filepath.Join(t.TempDir(), "conversations")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(root, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // only keeps a hang from blocking the run
	defer cancel()
	run := exec.CommandContext(ctx, bin, "run", "--config", "testdata/acp-continuity.Caddyfile", "--adapter", "caddyfile")
	run.Env = workspaceEnv(t, root)
	out, err := run.CombinedOutput()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("caddy run with another user's conversation_root = %v (deadline: %v), want it to refuse to start\n%s", err, ctx.Err(), out)
	}
	if want := "ACP conversation_root " + root + " is owned by uid 65534"; !strings.Contains(string(out), want) {
		t.Fatalf("caddy run's output does not say %q:\n%s", want, out)
	}
}

// A root of the server's user that is 0755 is tightened to 0700 when the server starts, and a
// symlink planted at <root>/<conversation id> fails that conversation's execution over HTTP
// with the message that says so, and is left in place.
func TestBinaryACPWorkspaceRefusesAPlantedSymlink(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)
	root := filepath.Join(t.TempDir(), "conversations")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	srv := startCaddyWith(t, bin, workspaceEnv(t, root), "testdata/acp-continuity.Caddyfile")
	defer srv.stop(t)
	if info, err := os.Stat(root); err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("the conversation root once the server runs: %v, %v; want 0700", info, err)
	}

	c := &client{t: t, base: srv.url}
	conv := c.post("/v1/conversations", map[string]any{}, http.StatusCreated)["id"].(string)
	outside := t.TempDir()
	link := filepath.Join(root, conv)
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	started := c.post("/v1/executions", map[string]any{"conversationId": conv, "providerId": "remembering", "input": "hello"}, http.StatusAccepted)
	exec := c.awaitEnd(started["id"].(string))
	want := "ACP working directory <conversation_root>/" + conv + " is a symbolic link"
	if exec.State != api.ExecutionStateFailed || exec.Error == nil || !strings.HasPrefix(exec.Error.Message, want) {
		t.Fatalf("execution in a planted symlink: %s %+v, want failed with %q", exec.State, exec.Error, want)
	}
	if info, err := os.Lstat(link); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the planted link after the turn: %v, %v; want it left in place", info, err)
	}
	if !strings.Contains(srv.log.String(), "ACP turn refused its working directory") {
		t.Fatalf("the server's log does not tell the operator:\n%s", srv.log.String())
	}
}
