package acp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// nobody is the uid that stands for "another user" in the ownership tests.
const nobody = 65534

// newWorkspaceHarness runs the fixture agent with a conversation root that already exists
// (0700, the server's), so that a test can plant something in it before a turn.
func newWorkspaceHarness(t *testing.T) (*harness, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "conversations")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, "stream", func(c *Config) { c.ConversationRoot = root })
	return h, root
}

// requireRefusedWorkspace checks that the turn failed with the workspace's own message naming
// reason, and that no agent was spawned for it.
func requireRefusedWorkspace(t *testing.T, h *harness, exec api.Execution, events []api.RuntimeEvent, reason string) {
	t.Helper()
	last := requireTerminal(t, exec, events, api.ExecutionStateFailed)
	message := typed(last.Data.AsRunFailedData()).Message
	if !strings.Contains(message, "working directory") || !strings.Contains(message, reason) {
		t.Fatalf("run.failed message = %q, want the working directory refused because it %s", message, reason)
	}
	t.Logf("run.failed: %s", message)
	if exec.Error == nil || exec.Error.Message != message {
		t.Fatalf("execution error = %+v, want %q", exec.Error, message)
	}
	if _, spawned := h.pid(exec.ID); spawned {
		t.Fatal("an agent was spawned in a refused working directory")
	}
}

// requireRoot skips, saying why, where changing a file's owner needs privileges this run lacks.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("giving a directory to uid %d needs root; this test runs as uid %d", nobody, os.Geteuid())
	}
}

// A symlink planted at <root>/<id> fails the turn: it is neither followed nor replaced (it may
// be the operator's to inspect), and nothing is created where it points.
func TestPlantedSymlinkFailsTheTurn(t *testing.T) {
	h, root := newWorkspaceHarness(t)
	conv := h.conversation()
	outside := t.TempDir()
	link := filepath.Join(root, conv)
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	exec, events := h.turn(conv, "hello")
	requireRefusedWorkspace(t, h, exec, events, "symbolic link")
	if target, err := os.Readlink(link); err != nil || target != outside {
		t.Fatalf("the planted link is now %q, %v; want it left pointing at %s", target, err, outside)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("the link's target gained %d entries", len(entries))
	}
}

// A planted directory open to other users fails the turn and keeps its mode: the harness does
// not chmod what may hold the conversation's earlier work.
func TestPlantedWideDirectoryFailsTheTurn(t *testing.T) {
	h, root := newWorkspaceHarness(t)
	conv := h.conversation()
	dir := filepath.Join(root, conv)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	exec, events := h.turn(conv, "hello")
	requireRefusedWorkspace(t, h, exec, events, "0777")
	if info, err := os.Lstat(dir); err != nil || info.Mode().Perm() != 0o777 {
		t.Fatalf("the planted directory is now %v, %v; want it left 0777", info, err)
	}
}

// A conversation path that is a plain file fails the turn.
func TestConversationPathNotADirectoryFailsTheTurn(t *testing.T) {
	h, root := newWorkspaceHarness(t)
	conv := h.conversation()
	if err := os.WriteFile(filepath.Join(root, conv), []byte("work"), 0o600); err != nil {
		t.Fatal(err)
	}
	exec, events := h.turn(conv, "hello")
	requireRefusedWorkspace(t, h, exec, events, "not a directory")
}

// A conversation directory owned by another user fails the turn and stays that user's.
func TestForeignConversationDirectoryFailsTheTurn(t *testing.T) {
	requireRoot(t)
	h, root := newWorkspaceHarness(t)
	conv := h.conversation()
	dir := filepath.Join(root, conv)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	exec, events := h.turn(conv, "hello")
	requireRefusedWorkspace(t, h, exec, events, "another user")
	if uid := ownerUID(t, dir); uid != nobody {
		t.Fatalf("the directory's owner is now uid %d, want it left %d", uid, nobody)
	}
}

// The check runs every turn: a directory swapped for a symlink after a turn fails the next
// one, even though the conversation's process is still warm, and that process is ended (its
// session's cwd now names somewhere else).
func TestDirectorySwappedForSymlinkFailsTheNextTurn(t *testing.T) {
	h, root := newWorkspaceHarness(t)
	conv := h.conversation()
	first, events := h.turn(conv, "hello")
	requireTerminal(t, first, events, api.ExecutionStateSucceeded)
	h.assertWarm(first.ID)

	dir := filepath.Join(root, conv)
	if err := os.Rename(dir, dir+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), dir); err != nil {
		t.Fatal(err)
	}
	second, events := h.turn(conv, "again")
	requireRefusedWorkspace(t, h, second, events, "symbolic link")
	h.assertReaped(first.ID)
}

// A new conversation directory is created 0700 inside the root.
func TestNewConversationDirectoryIs0700(t *testing.T) {
	h, root := newWorkspaceHarness(t)
	conv := h.conversation()
	exec, events := h.turn(conv, "hello")
	requireTerminal(t, exec, events, api.ExecutionStateSucceeded)
	if info, err := os.Lstat(filepath.Join(root, conv)); err != nil || !info.IsDir() || info.Mode().Perm() != 0o700 {
		t.Fatalf("the conversation's directory: %v, %v; want a 0700 directory", info, err)
	}
}

// Start makes the root the server's alone: a missing root is created 0700, an existing one of
// the server's user is tightened to 0700.
func TestStartMakesTheRootPrivate(t *testing.T) {
	base := t.TempDir()
	existing := filepath.Join(base, "existing")
	if err := os.Mkdir(existing, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(existing, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{existing, filepath.Join(base, "missing", "conversations")} {
		p, err := New(Config{Command: fixtureAgent, ConversationRoot: root, ShutdownGrace: Duration(testGrace)})
		if err != nil {
			t.Fatal(err)
		}
		err = p.Start(context.Background(), nil)
		p.Close()
		if err != nil {
			t.Fatalf("Start with root %s: %v", root, err)
		}
		if info, err := os.Stat(root); err != nil || !info.IsDir() || info.Mode().Perm() != 0o700 {
			t.Fatalf("root %s after Start: %v, %v; want a 0700 directory", root, info, err)
		}
	}
}

// A root owned by another user refuses to start, says why, and is left as it is; a turn on a
// provider that was not started is refused as well.
func TestForeignRootRefusesToStart(t *testing.T) {
	requireRoot(t)
	root := filepath.Join(t.TempDir(), "conversations")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(root, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{Command: fixtureAgent, ConversationRoot: root, ShutdownGrace: Duration(testGrace)})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Start(context.Background(), nil)
	p.Close()
	if err == nil || !strings.Contains(err.Error(), "owned by uid 65534") || !strings.Contains(err.Error(), root) {
		t.Fatalf("Start with a root of uid %d = %v, want a refusal naming the root and its owner", nobody, err)
	}
	if info, err := os.Stat(root); err != nil || info.Mode().Perm() != 0o755 || ownerUID(t, root) != nobody {
		t.Fatalf("the foreign root after Start: %v, %v; want it left 0755, uid %d", info, err, nobody)
	}

	h := newHarness(t, "stream", func(c *Config) { c.ConversationRoot = root })
	exec, events := h.run("hello", nil)
	requireRefusedWorkspace(t, h, exec, events, "another user")
}

// Forgetting a conversation whose path was replaced by a symlink removes the link, never what
// it points to.
func TestForgetRemovesAPlantedLinkOnly(t *testing.T) {
	h, root := newWorkspaceHarness(t)
	conv := h.conversation()
	outside := t.TempDir()
	kept := filepath.Join(outside, "kept.txt")
	if err := os.WriteFile(kept, []byte("not the harness's"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, conv)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.provider.ForgetConversation(context.Background(), conv); err != nil {
		t.Fatalf("ForgetConversation: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(root, conv)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the planted link after forgetting: %v", err)
	}
	if _, err := os.Stat(kept); err != nil {
		t.Fatalf("a file outside the root was removed: %v", err)
	}
}

func ownerUID(t *testing.T, path string) uint32 {
	t.Helper()
	info, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Sys().(*syscall.Stat_t).Uid
}

// A root replaced while the server runs (moved away, another directory made at its path) is
// not used through the stale descriptor: the next turn reopens what the path names, makes it
// 0700 and works there.
func TestReplacedRootIsReopened(t *testing.T) {
	h, root := newWorkspaceHarness(t)
	first, events := h.turn(h.conversation(), "hello")
	requireTerminal(t, first, events, api.ExecutionStateSucceeded)
	if err := os.Rename(root, root+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	conv := h.conversation()
	second, events := h.turn(conv, "again")
	requireTerminal(t, second, events, api.ExecutionStateSucceeded)
	if info, err := os.Lstat(filepath.Join(root, conv)); err != nil || !info.IsDir() {
		t.Fatalf("the new conversation's directory under the replaced root: %v, %v", info, err)
	}
	if info, err := os.Stat(root); err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("the replaced root: %v, %v; want it tightened to 0700", info, err)
	}
}
