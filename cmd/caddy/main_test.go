package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/internal/testutil"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// These tests run the real binary, as `make run` does: built from this package, started as a
// subprocess with examples/Caddyfile (its port, admin address and data directory moved through
// the environment placeholders the file reads), stopped with SIGTERM.

const exampleCaddyfile = "../../examples/Caddyfile"

// TestBinaryKeepsExecutionsAcrossRestart runs an execution, stops the server with SIGTERM, starts
// it again on the same data directory and reads the same execution and events back. An execution
// that was still waiting for approval at the stop is failed once by recovery. While the server
// runs, `caddy validate` of the same config (same store) succeeds.
func TestBinaryKeepsExecutionsAcrossRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)
	env := instanceEnv(t)

	srv := startCaddy(t, bin, env)
	c := &client{t: t, base: srv.url}
	conv := c.post("/v1/conversations", map[string]any{}, http.StatusCreated)
	convID := conv["id"].(string)
	done := c.post("/v1/executions", map[string]any{"conversationId": convID, "providerId": "mock", "input": "hello runtime"}, http.StatusAccepted)
	doneID := done["id"].(string)
	waiting := c.post("/v1/executions", map[string]any{
		"conversationId": convID, "providerId": "mock", "input": "never approved",
		"config": map[string]any{"requireApproval": true},
	}, http.StatusAccepted)
	waitingID := waiting["id"].(string)

	finished := c.waitFor(doneID, api.ExecutionStateSucceeded)
	c.waitFor(waitingID, api.ExecutionStateAwaitingApproval)
	eventsBefore := c.getRaw("/v1/executions/" + doneID + "/events")

	// `caddy validate` provisions the config in another process while this one holds the store.
	// Provisioning opens no store (caddymodule/app.go): validate never reaches for the bbolt
	// file's lock, so it neither waits for it nor warns about it.
	validate := exec.Command(bin, "validate", "--config", exampleCaddyfile, "--adapter", "caddyfile")
	validate.Env = env
	out, err := validate.CombinedOutput()
	if err != nil {
		t.Fatalf("caddy validate while the server runs: %v\n%s", err, out)
	}
	if bytes.Contains(out, []byte("store is locked")) || bytes.Contains(out, []byte("opened the harness store")) {
		t.Fatalf("caddy validate opened the live server's store:\n%s", out)
	}
	c.get("/healthz") // still serving

	// A client streams the waiting execution when the server is told to stop. Caddy's default
	// grace period is eternal, so unless the module ends its streams the process never exits.
	stream := c.openStream(waitingID)
	srv.stop(t)
	if _, err := io.ReadAll(stream.Body); err != nil {
		t.Fatalf("the event stream did not end cleanly at the stop: %v", err)
	}
	stream.Body.Close()

	srv = startCaddy(t, bin, env)
	c = &client{t: t, base: srv.url}
	if again := c.get("/v1/executions/" + doneID); !equalJSON(t, again, finished) {
		t.Fatalf("execution after the restart:\n%v\nbefore:\n%v", again, finished)
	}
	if eventsAfter := c.getRaw("/v1/executions/" + doneID + "/events"); !bytes.Equal(eventsAfter, eventsBefore) {
		t.Fatalf("events after the restart:\n%s\nbefore:\n%s", eventsAfter, eventsBefore)
	}
	if got := c.get("/v1/conversations/" + convID); got["id"] != convID {
		t.Fatalf("conversation after the restart: %v", got)
	}

	recovered := c.get("/v1/executions/" + waitingID)
	if recovered["state"] != string(api.ExecutionStateFailed) {
		t.Fatalf("unfinished execution after the restart: state %v, want failed", recovered["state"])
	}
	var list api.EventList
	if err := json.Unmarshal(c.getRaw("/v1/executions/"+waitingID+"/events"), &list); err != nil {
		t.Fatal(err)
	}
	failures := 0
	for _, ev := range list.Events {
		if ev.Type == api.StandardEventTypeRunFailed {
			failures++
		}
	}
	if last := list.Events[len(list.Events)-1]; failures != 1 || last.Type != api.StandardEventTypeRunFailed {
		t.Fatalf("recovered execution events: %d run.failed, last %s", failures, last.Type)
	}
	srv.stop(t)
}

// TestBinarySecondInstanceWaitsForTheStore starts a second server on the same data directory
// while the first one holds the store: it starts, answers 503 with a Problem while the store is
// locked, and serves the first one's executions once that one has stopped — the hand-over of a
// restart where the new process starts before the old one has finished draining.
func TestBinarySecondInstanceWaitsForTheStore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)
	env1 := instanceEnv(t)
	srv1 := startCaddy(t, bin, env1)
	c1 := &client{t: t, base: srv1.url}
	conv := c1.post("/v1/conversations", map[string]any{}, http.StatusCreated)
	convID := conv["id"].(string)

	// Same data directory (and Caddy home), other ports.
	env2 := append(slices.Clone(env1), "HARNESS_PORT="+freePort(t), "HARNESS_ADMIN=localhost:"+freePort(t))
	srv2 := startCaddy(t, bin, env2)
	c2 := &client{t: t, base: srv2.url}
	var problem api.Problem
	if err := json.Unmarshal(c2.request(http.MethodGet, "/v1/conversations/"+convID, nil, http.StatusServiceUnavailable), &problem); err != nil {
		t.Fatal(err)
	}
	if problem.Code != "INTERNAL_ERROR" || !strings.Contains(problem.Message, "Runtime unavailable") {
		t.Fatalf("problem while the store is locked: %+v", problem)
	}

	srv1.stop(t)
	if got := c2.get("/v1/conversations/" + convID); got["id"] != convID {
		t.Fatalf("the second instance after the first stopped: %v", got)
	}
	srv2.stop(t)
}

// buildCaddy builds this package once per test run into a temporary directory. Under -race the
// binary is built with the race detector too, which reuses the instrumented packages the test
// itself was built from.
func buildCaddy(t *testing.T) string {
	t.Helper()
	return caddyBinary.Path(t)
}

var caddyBinary = testutil.GoBinary{Package: ".", Flags: raceFlags()}

// raceFlags builds the binary with the race detector when the tests run under it (reusing the
// instrumented packages the test itself was built from).
func raceFlags() []string {
	if raceEnabled {
		return []string{"-race"}
	}
	return nil
}

func TestMain(m *testing.M) {
	code := m.Run()
	caddyBinary.Remove()
	os.Exit(code)
}

// instanceEnv is the environment of one server instance: free ports, a temporary data directory
// and Caddy home, so nothing touches the developer's own.
func instanceEnv(t *testing.T) []string {
	t.Helper()
	home := t.TempDir()
	return append(os.Environ(),
		"HARNESS_PORT="+freePort(t),
		"HARNESS_ADMIN=localhost:"+freePort(t),
		"HARNESS_DATA_DIR="+filepath.Join(home, "harness"),
		"XDG_DATA_HOME="+filepath.Join(home, "data"),
		"XDG_CONFIG_HOME="+filepath.Join(home, "config"),
	)
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}

type server struct {
	cmd    *exec.Cmd
	url    string
	exited chan error
	log    *testutil.LockedBuffer // everything the server wrote to stderr
}

var listeningLine = regexp.MustCompile(`Harness Runtime API listening on (http://\S+?)"`)

// startCaddy starts the binary and waits for the line that tells where the API listens, which is
// also what a newcomer looks for in `make run`'s output.
func startCaddy(t *testing.T, bin string, env []string) *server {
	t.Helper()
	return startCaddyWith(t, bin, env, exampleCaddyfile)
}

// startCaddyWith is startCaddy with another Caddyfile.
func startCaddyWith(t *testing.T, bin string, env []string, caddyfile string) *server {
	t.Helper()
	cmd := exec.Command(bin, "run", "--config", caddyfile, "--adapter", "caddyfile")
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, exited: make(chan error, 1), log: &testutil.LockedBuffer{}}
	found := make(chan string, 1)
	seen := s.log
	go func() {
		scanner := bufio.NewScanner(stderr)
		for scanner.Scan() {
			line := scanner.Text()
			_, _ = seen.Write([]byte(line + "\n"))
			if m := listeningLine.FindStringSubmatch(line); m != nil {
				found <- m[1]
				break
			}
		}
		// Keep draining, or the server would block on a full pipe.
		_, _ = io.Copy(seen, stderr)
		s.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	})

	port := lookup(env, "HARNESS_PORT")
	select {
	case url := <-found:
		if want := "http://127.0.0.1:" + port; url != want {
			t.Fatalf("the server announced %s, want %s", url, want)
		}
		s.url = url
	case err := <-s.exited:
		t.Fatalf("caddy exited before listening: %v\n%s", err, seen.String())
	case <-time.After(time.Minute): // only keeps a broken binary from hanging the run
		t.Fatalf("caddy did not announce where it listens\n%s", seen.String())
	}
	return s
}

// stop sends SIGTERM and requires a clean exit.
func (s *server) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.exited:
		if err != nil {
			t.Fatalf("caddy exited with %v after SIGTERM", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("caddy did not exit after SIGTERM")
	}
}

func lookup(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

type client struct {
	t    *testing.T
	base string
}

func (c *client) request(method, path string, body any, want int) []byte {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(c.t.Context(), method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	if resp.StatusCode != want {
		c.t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, want, raw)
	}
	return raw
}

// openStream opens the SSE stream of an execution.
func (c *client) openStream(id string) *http.Response {
	c.t.Helper()
	req, err := http.NewRequestWithContext(c.t.Context(), http.MethodGet, c.base+"/v1/executions/"+id+"/events", nil)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("opening the event stream: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("event stream: status %d", resp.StatusCode)
	}
	return resp
}

func (c *client) post(path string, body any, want int) map[string]any {
	c.t.Helper()
	return decode(c.t, c.request(http.MethodPost, path, body, want))
}

func (c *client) get(path string) map[string]any {
	c.t.Helper()
	return decode(c.t, c.getRaw(path))
}

func (c *client) getRaw(path string) []byte {
	c.t.Helper()
	return c.request(http.MethodGet, path, nil, http.StatusOK)
}

// waitFor polls an execution until it reaches state (the SSE stream is tested in caddymodule;
// here the subject is the process, so plain polling keeps the test short).
func (c *client) waitFor(id string, state api.ExecutionState) map[string]any {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), time.Minute)
	defer cancel()
	for {
		exec := c.get("/v1/executions/" + id)
		if exec["state"] == string(state) {
			return exec
		}
		select {
		case <-ctx.Done():
			c.t.Fatalf("execution %s stayed %v, want %s", id, exec["state"], state)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func decode(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	return m
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(ja, jb)
}
