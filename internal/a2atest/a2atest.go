// Package a2atest starts the A2A test agents — agents on the official JavaScript SDK's server,
// @a2a-js/sdk, in each build the a2a provider is proven against (Builds) — for the provider's
// tests and the binary's. It is imported only by _test.go files.
package a2atest

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/harness-edge/harness-edge/internal/testutil"
)

// Build is one build of the test agent: an @a2a-js/sdk line (a directory under testdata with its
// package.json and committed package-lock.json) and how it is started. Every build does the
// same with each input (testdata/scenarios.mjs).
type Build struct {
	// Name names the build in test names: the SDK version, and "+legacyCompat" when its A2A 0.3
	// compatibility is switched on.
	Name string
	// Wire is the A2A version the a2a provider is expected to speak to the build: "1.0" when
	// the card offers it, else "0.3".
	Wire string
	dir  string   // under testdata
	env  []string // added to every start
}

// Builds are the agent builds the a2a provider is proven against: @a2a-js/sdk 0.3 (A2A 0.3),
// 1.x speaking only A2A 1.0 (the SDK's default), and 1.x with its 0.3 compatibility on (both
// versions offered: the provider takes 1.0).
func Builds(t testing.TB) []Build {
	t.Helper()
	v03, v1 := sdkVersion(t, "js-agent-0.3"), sdkVersion(t, "js-agent-1.x")
	return []Build{
		{Name: v03, Wire: "0.3", dir: "js-agent-0.3"},
		{Name: v1, Wire: "1.0", dir: "js-agent-1.x"},
		{Name: v1 + "+legacyCompat", Wire: "1.0", dir: "js-agent-1.x", env: []string{"LEGACY_COMPAT=true"}},
	}
}

// V03 is the @a2a-js/sdk 0.3 build, for tests that need one agent of any build.
func V03(t testing.TB) Build { return Builds(t)[0] }

// sdkVersion is the @a2a-js/sdk version a build's package.json pins (exact: npm ci installs it
// from the lock file).
func sdkVersion(t testing.TB, dir string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testdataDir(), dir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(raw, &pkg); err != nil || pkg.Dependencies["@a2a-js/sdk"] == "" {
		t.Fatalf("%s/package.json names no @a2a-js/sdk version: %v", dir, err)
	}
	return "sdk-" + pkg.Dependencies["@a2a-js/sdk"]
}

// Agent is a test agent running as a node subprocess.
type Agent struct {
	// URL is the agent's own base URL (http://127.0.0.1:port).
	URL    string
	Stderr *testutil.LockedBuffer
	cmd    *exec.Cmd
}

// installs runs `npm ci` once per build directory and test binary.
var installs sync.Map // dir → *install

type install struct {
	once sync.Once
	err  string
}

// testdataDir is testdata next to this file, wherever the test runs from.
func testdataDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata")
}

// prepare returns node's path and the build's agent script, installing its locked dependencies
// with `npm ci` once when they are missing. Node and npm are required, not optional: a machine
// without them fails loudly rather than skip the proof against an A2A implementation nobody
// here wrote.
func (b Build) prepare(t testing.TB) (node, script string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is required for the A2A interoperability tests (install Node.js 20+ with npm): %v", err)
	}
	dir := filepath.Join(testdataDir(), b.dir)
	v, _ := installs.LoadOrStore(dir, &install{})
	in := v.(*install)
	in.once.Do(func() {
		// Test binaries of several packages may get here at once (go test ./... runs them in
		// parallel): one runs npm ci, the others wait for it and find node_modules ready.
		unlock, err := lockFile(filepath.Join(dir, ".npm-ci.lock"))
		if err != nil {
			in.err = "lock the A2A test agent's directory for npm ci: " + err.Error()
			return
		}
		defer unlock()
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@a2a-js", "sdk", "package.json")); err == nil {
			return
		}
		npm, err := exec.LookPath("npm")
		if err != nil {
			in.err = "npm is required to install @a2a-js/sdk for the A2A tests: " + err.Error()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			in.err = "npm ci in " + dir + ": " + err.Error() + "\n" + string(out)
		}
	})
	if in.err != "" {
		t.Fatal(in.err)
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

// Start starts the @a2a-js/sdk 0.3 build (V03); see Build.Start.
func Start(t testing.TB, env ...string) *Agent {
	t.Helper()
	return V03(t).Start(t, env...)
}

// Start starts an agent of the build; env adds PORT or PUBLIC_URL (see the build's agent.mjs;
// PolledURL is the same agent without streaming). It is killed when the test ends.
func (b Build) Start(t testing.TB, env ...string) *Agent {
	t.Helper()
	node, script := b.prepare(t)
	cmd := exec.Command(node, script)
	cmd.Env = append(os.Environ(), "NODE_NO_WARNINGS=1")
	cmd.Env = append(append(cmd.Env, b.env...), env...)
	a := &Agent{Stderr: &testutil.LockedBuffer{}, cmd: cmd}
	cmd.Stderr = a.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.Kill()
		if t.Failed() {
			t.Logf("A2A test agent (%s) stderr:\n%s", b.Name, a.Stderr.String())
		}
	})
	lines := bufio.NewReader(stdout)
	line, err := lines.ReadString('\n')
	port, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		t.Fatalf("A2A test agent (%s) did not start: %q %v\n%s", b.Name, line, err, a.Stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, lines) }()
	a.URL = "http://127.0.0.1:" + port
	return a
}

// Kill kills the agent (SIGKILL) and waits for it: its tasks, kept in memory, are gone. Killing
// it again does nothing.
func (a *Agent) Kill() {
	if a.cmd.ProcessState != nil {
		return
	}
	_ = a.cmd.Process.Kill()
	_ = a.cmd.Wait()
}

// PolledURL is the base URL under which the agent serves itself as an agent that does not
// stream (its card says streaming: false).
func (a *Agent) PolledURL() string { return a.URL + "/polled" }

// Port is the port the agent listens on.
func (a *Agent) Port() string { return a.URL[strings.LastIndexByte(a.URL, ':')+1:] }

// Request is what reached the agent with one HTTP request (testdata/scenarios.mjs,
// recordRequests).
type Request struct {
	Path string `json:"path"`
	// Method is the JSON-RPC method ("" for the card): SendStreamingMessage in A2A 1.0,
	// message/stream in 0.3, and so on.
	Method        string `json:"method"`
	Authorization string `json:"authorization"`
	Tenant        string `json:"tenant"` // the X-Tenant header
	Traceparent   string `json:"traceparent"`
	A2AVersion    string `json:"a2aVersion"` // the A2A-Version header
}

// Requests lists the requests the agent has served so far, in order.
func (a *Agent) Requests(t testing.TB) []Request {
	t.Helper()
	resp, err := http.Get(a.URL + "/test/requests")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []Request
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Task asks the agent itself, through the Go SDK (in whichever A2A version its card offers), for
// a task with its whole history, waiting (up to ten seconds) for a terminal state.
func (a *Agent) Task(t testing.TB, taskID string) *a2a.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resolver := &agentcard.Resolver{CardParser: a2av0.NewAgentCardParser()}
	card, err := resolver.Resolve(ctx, a.URL, agentcard.WithRequestHeader(a2a.SvcParamVersion, string(a2a.Version)))
	if err != nil {
		t.Fatal(err)
	}
	client, err := a2aclient.NewFromCard(ctx, card, a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{}))
	if err != nil {
		t.Fatal(err)
	}
	all := 1 << 20
	for {
		task, err := client.GetTask(ctx, &a2a.GetTaskRequest{ID: a2a.TaskID(taskID), HistoryLength: &all})
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
