// Package a2atest starts the A2A test agent — an agent on the official JavaScript SDK's server,
// @a2a-js/sdk 0.3 (testdata/js-agent) — for the a2a provider's tests and the binary's. It is
// imported only by _test.go files.
package a2atest

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/harness-edge/harness-edge/internal/testutil"
)

// Agent is the test agent running as a node subprocess (see testdata/js-agent/agent.mjs for
// what it does with each input).
type Agent struct {
	// URL is the agent's own base URL (http://127.0.0.1:port).
	URL    string
	Stderr *testutil.LockedBuffer
}

var install struct {
	once sync.Once
	err  string
}

// agentDir is testdata/js-agent next to this file, wherever the test runs from.
func agentDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", "js-agent")
}

// prepare returns node's path and the agent script, installing the locked dependencies with
// `npm ci` once when they are missing. Node and npm are required, not optional: a machine
// without them fails loudly rather than skip the proof against an A2A implementation nobody
// here wrote.
func prepare(t testing.TB) (node, script string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is required for the A2A interoperability tests (install Node.js 20+ with npm): %v", err)
	}
	dir := agentDir()
	install.once.Do(func() {
		// Test binaries of several packages may get here at once (go test ./... runs them in
		// parallel): one runs npm ci, the others wait for it and find node_modules ready.
		unlock, err := lockFile(filepath.Join(dir, ".npm-ci.lock"))
		if err != nil {
			install.err = "lock the A2A test agent's directory for npm ci: " + err.Error()
			return
		}
		defer unlock()
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@a2a-js", "sdk", "package.json")); err == nil {
			return
		}
		npm, err := exec.LookPath("npm")
		if err != nil {
			install.err = "npm is required to install @a2a-js/sdk for the A2A tests: " + err.Error()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			install.err = "npm ci in " + dir + ": " + err.Error() + "\n" + string(out)
		}
	})
	if install.err != "" {
		t.Fatal(install.err)
	}
	return node, filepath.Join(dir, "agent.mjs")
}

// lockFile takes an exclusive flock on path (created if missing) until unlock.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// Start starts the agent; env adds PUBLIC_URL, STREAMING=false, … (see agent.mjs). It is killed
// when the test ends.
func Start(t testing.TB, env ...string) *Agent {
	t.Helper()
	node, script := prepare(t)
	cmd := exec.Command(node, script)
	cmd.Env = append(os.Environ(), append([]string{"NODE_NO_WARNINGS=1"}, env...)...)
	a := &Agent{Stderr: &testutil.LockedBuffer{}}
	cmd.Stderr = a.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("A2A test agent stderr:\n%s", a.Stderr.String())
		}
	})
	lines := bufio.NewReader(stdout)
	line, err := lines.ReadString('\n')
	port, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		t.Fatalf("A2A test agent did not start: %q %v\n%s", line, err, a.Stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, lines) }()
	a.URL = "http://127.0.0.1:" + port
	return a
}

// Task asks the agent itself, through the Go SDK, for a task with its whole history, waiting
// (up to ten seconds) for a terminal state.
func (a *Agent) Task(t testing.TB, taskID string) *a2a.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	card, err := agentcard.DefaultResolver.Resolve(ctx, a.URL)
	if err != nil {
		t.Fatal(err)
	}
	client, err := a2aclient.NewFromCard(ctx, card)
	if err != nil {
		t.Fatal(err)
	}
	all := 1 << 20
	for {
		task, err := client.GetTask(ctx, &a2a.TaskQueryParams{ID: a2a.TaskID(taskID), HistoryLength: &all})
		if err != nil {
			t.Fatal(err)
		}
		if task.Status.State.Terminal() || ctx.Err() != nil {
			return task
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TaskState is the state of Task.
func (a *Agent) TaskState(t testing.TB, taskID string) a2a.TaskState {
	t.Helper()
	return a.Task(t, taskID).Status.State
}
