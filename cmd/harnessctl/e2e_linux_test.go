package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/internal/testutil"
	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// TestEndToEnd runs the real binaries: bin/caddy built from ./cmd/caddy and started with
// examples/Caddyfile (port, data directory and admin moved through the environment placeholders
// the file reads), and harnessctl built from this package, driven through a pseudo-terminal
// where a person would type.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy and harnessctl binaries; run without -short")
	}
	dir := t.TempDir()
	caddyBin := goBuild(t, dir, "caddy", "../caddy", false)
	// Under -race, harnessctl is built with the race detector too: a race in the child makes it
	// exit 66, which the exit code checks below catch.
	ctlBin := goBuild(t, dir, "harnessctl", ".", raceEnabled)
	base := startCaddy(t, caddyBin, dir)
	client, err := sdk.New(base)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("ApprovalAnsweredAtThePrompt", func(t *testing.T) {
		term := startInTerminal(t, ctlBin, base, "run", "--config", `{"requireApproval":true}`, "deploy the site")
		term.waitFor(t, "[y/N] ")
		term.write(t, "y\n")
		if code := term.wait(t); code != exitOK {
			t.Fatalf("exit code %d, want %d; terminal:\n%s", code, exitOK, term.output())
		}
		out := term.output()
		if !strings.Contains(out, "Approve mock execution — Synthetic approval used by the reference provider. [y/N] y") {
			t.Errorf("the terminal did not show the question and the typed answer:\n%s", out)
		}
		if !strings.Contains(out, "Echo: deploy the site") {
			t.Errorf("the terminal did not show the output:\n%s", out)
		}
		events := replay(t, client, term.executionID(t))
		responded := findEvent(events, api.StandardEventTypeActionResponded)
		if responded == nil || !deref(typed(responded.Data.AsActionRespondedData()).Approved) {
			t.Errorf("action.responded %v, want approved true", responded)
		}
		if last := events[len(events)-1]; last.Type != api.StandardEventTypeRunCompleted {
			t.Errorf("last event %s, want run.completed", last.Type)
		}
	})

	t.Run("CtrlCCancels", func(t *testing.T) {
		// The mock sleeps a long time before its first chunk: the run is live until cancelled.
		term := startInTerminal(t, ctlBin, base, "run", "--config", `{"delayMs":600000}`, "a slow one")
		term.waitFor(t, "Ctrl-C cancels it")
		id := term.executionID(t)
		term.write(t, "\x03") // the terminal's interrupt character: the line discipline sends SIGINT
		if code := term.wait(t); code != exitCancelled {
			t.Fatalf("exit code %d, want %d; terminal:\n%s", code, exitCancelled, term.output())
		}
		if out := term.output(); !strings.Contains(out, "cancelled") {
			t.Errorf("the terminal did not say the execution was cancelled:\n%s", out)
		}
		exec, err := client.GetExecution(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if exec.State != api.ExecutionStateCancelled {
			t.Fatalf("execution is %s, want cancelled", exec.State)
		}
		events := replay(t, client, id)
		last := events[len(events)-1]
		if last.Type != api.StandardEventTypeRunCancelled || deref(typed(last.Data.AsRunCancelledData()).Reason) != cancelReason {
			t.Errorf("last event %s %v, want run.cancelled with reason %q", last.Type, last.Data, cancelReason)
		}
	})

	t.Run("EventsReplayedAsJSONLines", func(t *testing.T) {
		out, code := runCtl(t, ctlBin, base, "run", "--json", "hello", "runtime")
		if code != exitOK {
			t.Fatalf("run: exit code %d\n%s", code, out)
		}
		var exec api.Execution
		if err := json.Unmarshal(out, &exec); err != nil || exec.FinalOutput == nil || *exec.FinalOutput != "Echo: hello runtime" {
			t.Fatalf("run --json printed %s (%v)", out, err)
		}
		out, code = runCtl(t, ctlBin, base, "events", exec.ID)
		if code != exitOK {
			t.Fatalf("events: exit code %d\n%s", code, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		wantTypes := []api.StandardEventType{"run.queued", "run.started", "output.text.delta", "output.text.delta",
			"output.text.delta", "output.text.done", "run.completed"}
		if len(lines) != len(wantTypes) {
			t.Fatalf("%d lines, want %d:\n%s", len(lines), len(wantTypes), out)
		}
		for i, line := range lines {
			var e api.RuntimeEvent
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("line %d is not a RuntimeEvent: %s", i+1, line)
			}
			if e.Sequence != int64(i+1) || e.Type != wantTypes[i] || e.ExecutionID != exec.ID {
				t.Errorf("line %d: sequence %d type %s of %s, want %d %s of %s", i+1, e.Sequence, e.Type, e.ExecutionID, i+1, wantTypes[i], exec.ID)
			}
		}
		if !strings.Contains(lines[6], `"finalOutput":"Echo: hello runtime"`) {
			t.Errorf("last line %s", lines[6])
		}
		out, _ = runCtl(t, ctlBin, base, "events", "--follow", "--after", "5", exec.ID)
		if got := strings.Count(string(out), "\n"); got != 2 || !strings.Contains(string(out), `"sequence":6`) {
			t.Errorf("events --follow --after 5 printed:\n%s\nwant events 6 and 7", out)
		}
	})

	e := &e2e{dir: dir, caddyBin: caddyBin, ctlBin: ctlBin, base: base, client: client}
	t.Run("FlagsAfterInput", e.testFlagsAfterInput)
	t.Run("UnknownFlagRejected", e.testUnknownFlagRejected)
	t.Run("PromptWithdrawnWhenAnsweredElsewhere", e.testPromptWithdrawnWhenAnsweredElsewhere)
	t.Run("PromptWithdrawnWhenCancelledElsewhere", e.testPromptWithdrawnWhenCancelledElsewhere)
	t.Run("ApproveNonInteractive", e.testApproveNonInteractive)
	t.Run("ArtifactsListed", e.testArtifactsListed)
	t.Run("CtrlCNoTextAfterNotice", e.testCtrlCNoTextAfterNotice)
	t.Run("Watch", e.testWatch)
	t.Run("ChatApprovalAndCtrlCAtPrompt", e.testChatApprovalAndCtrlCAtPrompt)
	t.Run("ChatEnqueue", e.testChatEnqueue)
	t.Run("ChatRejectKeepsLine", e.testChatRejectKeepsLine)
	t.Run("ChatInterrupt", e.testChatInterrupt)
	t.Run("ChatTypingDuringReply", e.testChatTypingDuringReply)
	t.Run("ChatApprovalReasks", e.testChatApprovalReasks)
	t.Run("CACert", e.testCACert)
	t.Run("PromptWithdrawnWhenServerRestarts", e.testPromptWithdrawnWhenServerRestarts)

	t.Run("Conformance", func(t *testing.T) {
		out, code := runCtl(t, ctlBin, base, "conformance", "--base", base)
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		summary := lines[len(lines)-1]
		if code != exitOK || !regexp.MustCompile(`^\d+ passed, 0 failed$`).MatchString(summary) {
			t.Fatalf("exit code %d, closing line %q:\n%s", code, summary, out)
		}
		for _, line := range lines[:len(lines)-1] {
			if !strings.HasPrefix(line, "PASS ") {
				t.Errorf("%s", line)
			}
		}
	})
}

// goBuild builds the package at pkg into dir/name.
func goBuild(t *testing.T, dir, name, pkg string, race bool) string {
	t.Helper()
	bin := filepath.Join(dir, name)
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, pkg)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// startCaddy serves examples/Caddyfile on a free port with its data in dir, and stops it with
// SIGTERM at the end of the test.
func startCaddy(t *testing.T, bin, dir string) string {
	t.Helper()
	port := freePort(t)
	startCaddyWith(t, bin, dir, "../../examples/Caddyfile", "http://127.0.0.1:"+port, nil, "HARNESS_PORT="+port, "HARNESS_ADMIN=off")
	return "http://127.0.0.1:" + port
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

// startCaddyWith runs bin with the Caddyfile config, its data and XDG directories in dir and
// env added, waits until base answers /healthz (over TLS, trusting roots when given), and stops
// it with SIGTERM at the end of the test. It returns a function that stops it earlier.
func startCaddyWith(t *testing.T, bin, dir, config, base string, roots func() *x509.CertPool, env ...string) (stop func()) {
	t.Helper()
	cmd := exec.Command(bin, "run", "--config", config, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(),
		"HARNESS_DATA_DIR="+filepath.Join(dir, "data"),
		"XDG_DATA_HOME="+filepath.Join(dir, "xdg-data"),
		"XDG_CONFIG_HOME="+filepath.Join(dir, "xdg-config"),
	)
	cmd.Env = append(cmd.Env, env...)
	var log testutil.LockedBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			if err := <-exited; err != nil {
				t.Errorf("caddy did not stop cleanly on SIGTERM: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	// Only a guard against a broken binary hanging the run, not a performance requirement.
	deadline := time.Now().Add(time.Minute)
	for {
		hc := http.DefaultClient
		if roots != nil {
			if pool := roots(); pool != nil {
				hc = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
			}
		}
		resp, err := hc.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return stop
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("caddy exited before serving: %v\n%s", err, log.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("caddy did not answer /healthz\n%s", log.String())
		}
	}
}

// runCtl runs harnessctl to completion without a terminal and returns its stdout and exit code.
func runCtl(t *testing.T, bin, base string, args ...string) ([]byte, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HARNESS_URL="+base)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatal(err)
	}
	if stderr.Len() > 0 {
		t.Logf("harnessctl %s: stderr:\n%s", strings.Join(args, " "), stderr.String())
	}
	return out, cmd.ProcessState.ExitCode()
}

// terminal is harnessctl running in a pseudo-terminal, as in a person's shell: it is the
// session leader with the terminal as its controlling terminal, so the interrupt character
// reaches it as SIGINT.
type terminal struct {
	cmd        *exec.Cmd
	controller *os.File
	exited     chan struct{}
	exitCode   int

	mu      sync.Mutex
	out     bytes.Buffer
	changed chan struct{} // closed and replaced at each read
	readEnd chan struct{}
}

func startInTerminal(t *testing.T, bin, base string, args ...string) *terminal {
	t.Helper()
	controller, tty, err := openPTY()
	if err != nil {
		t.Fatalf("pseudo-terminal: %v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HARNESS_URL="+base)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close() // the child has it; the controller sees EIO once the child is gone
	term := &terminal{cmd: cmd, controller: controller, exited: make(chan struct{}), changed: make(chan struct{}), readEnd: make(chan struct{})}
	go term.read()
	go func() {
		_ = cmd.Wait()
		term.exitCode = cmd.ProcessState.ExitCode()
		close(term.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-term.exited:
		default:
			_ = cmd.Process.Kill()
			<-term.exited
		}
		controller.Close()
		<-term.readEnd
	})
	return term
}

func (term *terminal) read() {
	defer close(term.readEnd)
	buf := make([]byte, 4096)
	for {
		n, err := term.controller.Read(buf)
		term.mu.Lock()
		term.out.Write(buf[:n])
		close(term.changed)
		term.changed = make(chan struct{})
		term.mu.Unlock()
		if err != nil {
			if !isPTYClosed(err) && !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				fmt.Fprintf(os.Stderr, "reading the pseudo-terminal: %v\n", err)
			}
			return
		}
	}
}

func (term *terminal) output() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.out.String()
}

// waitFor waits until the terminal shows s.
func (term *terminal) waitFor(t *testing.T, s string) {
	t.Helper()
	guard := time.After(time.Minute) // a hang guard only
	for {
		term.mu.Lock()
		shown, changed := strings.Contains(term.out.String(), s), term.changed
		term.mu.Unlock()
		if shown {
			return
		}
		select {
		case <-changed:
		case <-term.readEnd:
			t.Fatalf("harnessctl ended without showing %q:\n%s", s, term.output())
		case <-guard:
			t.Fatalf("the terminal never showed %q:\n%s", s, term.output())
		}
	}
}

func (term *terminal) write(t *testing.T, s string) {
	t.Helper()
	if _, err := term.controller.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
}

// wait waits for harnessctl to exit and returns its exit code.
func (term *terminal) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-term.exited:
	case <-time.After(time.Minute): // a hang guard only
		t.Fatalf("harnessctl did not exit:\n%s", term.output())
	}
	<-term.readEnd // everything it printed has been read
	return term.exitCode
}

var startedLine = regexp.MustCompile(`execution (exec_[0-9a-f]+) started`)

func (term *terminal) executionID(t *testing.T) string {
	t.Helper()
	m := startedLine.FindStringSubmatch(term.output())
	if m == nil {
		t.Fatalf("no execution id on the terminal:\n%s", term.output())
	}
	return m[1]
}

func replay(t *testing.T, c *sdk.Client, id string) []api.RuntimeEvent {
	t.Helper()
	list, err := c.ListEvents(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Events) == 0 {
		t.Fatalf("execution %s has no events", id)
	}
	return list.Events
}

func findEvent(events []api.RuntimeEvent, typ api.StandardEventType) *api.RuntimeEvent {
	for i := range events {
		if events[i].Type == typ {
			return &events[i]
		}
	}
	return nil
}
