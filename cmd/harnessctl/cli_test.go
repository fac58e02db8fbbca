package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/proxy"
	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// These tests run the commands in-process against the real proxy and runtime on loopback.

func serve(t *testing.T) string {
	t.Helper()
	rt, err := local.Open(t.TempDir(), backend.Options{Providers: []backend.Provider{mock.New()}})
	if err != nil {
		t.Fatal(err)
	}
	h := proxy.New(rt, proxy.Options{RetryHint: time.Millisecond})
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Shutdown()
		hs.Close()
		_ = rt.Close()
	})
	return hs.URL
}

// session is one harnessctl invocation in-process.
type session struct {
	stdout, stderr bytes.Buffer
	code           int
}

// ctl runs harnessctl with args against base; stdin is what the person types; interrupts
// holds the Ctrl-Cs pressed (delivered as soon as run listens).
func ctl(t *testing.T, base, stdin string, interrupts int, args ...string) *session {
	t.Helper()
	s := &session{}
	ch := make(chan os.Signal, interrupts+1)
	for range interrupts {
		ch <- os.Interrupt
	}
	a := &app{
		stdin:  strings.NewReader(stdin),
		stdout: &s.stdout,
		stderr: &s.stderr,
		getenv: func(k string) string {
			if k == "HARNESS_URL" {
				return base
			}
			return ""
		},
		interrupts: func() (<-chan os.Signal, func()) { return ch, func() {} },
	}
	s.code = a.main(args)
	return s
}

func (s *session) expect(t *testing.T, code int) {
	t.Helper()
	if s.code != code {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", s.code, code, s.stdout.String(), s.stderr.String())
	}
}

func sdkClient(t *testing.T, base string) *sdk.Client {
	t.Helper()
	c, err := sdk.New(base)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var executionIDOnStderr = startedLine

func (s *session) executionID(t *testing.T) string {
	t.Helper()
	m := executionIDOnStderr.FindStringSubmatch(s.stderr.String())
	if m == nil {
		t.Fatalf("no execution id on stderr:\n%s", s.stderr.String())
	}
	return m[1]
}

func TestRunAnswersApprovalAndInput(t *testing.T) {
	base := serve(t)
	s := ctl(t, base, "yes\nblue\n", 0, "run", "--config", `{"requireApproval":true,"requestInput":true}`, "hi")
	s.expect(t, exitOK)
	if got := s.stdout.String(); got != "Echo: hi blue\n" {
		t.Errorf("stdout %q", got)
	}
	for _, prompt := range []string{"? Approve mock execution — Synthetic approval used by the reference provider. [y/N] ", "? Provide mock input: "} {
		if !strings.Contains(s.stderr.String(), prompt) {
			t.Errorf("stderr lacks the prompt %q:\n%s", prompt, s.stderr.String())
		}
	}
}

func TestRunDeniedExitsFailed(t *testing.T) {
	base := serve(t)
	s := ctl(t, base, "n\n", 0, "run", "--config", `{"requireApproval":true}`, "hi")
	s.expect(t, exitFailed)
	if !strings.Contains(s.stderr.String(), "failed: Mock execution was not approved") {
		t.Errorf("stderr:\n%s", s.stderr.String())
	}
}

// TestRunEndOfInputCancels: Ctrl-D at a prompt cancels the execution.
func TestRunEndOfInputCancels(t *testing.T) {
	base := serve(t)
	s := ctl(t, base, "", 0, "run", "--config", `{"requireApproval":true}`, "hi")
	s.expect(t, exitCancelled)
	exec, err := sdkClient(t, base).GetExecution(context.Background(), s.executionID(t))
	if err != nil || exec.State != api.ExecutionStateCancelled {
		t.Fatalf("execution %v %v, want cancelled", exec.State, err)
	}
}

// TestRunInterruptCancelsAndWaits: the Ctrl-C pressed while the execution runs cancels it, and
// run returns once the run.cancelled event arrived, with the cancelled exit code.
func TestRunInterruptCancelsAndWaits(t *testing.T) {
	base := serve(t)
	s := ctl(t, base, "", 1, "run", "--json", "--config", `{"delayMs":600000}`, "slow")
	s.expect(t, exitCancelled)
	var final api.Execution
	if err := json.Unmarshal(s.stdout.Bytes(), &final); err != nil || final.State != api.ExecutionStateCancelled {
		t.Fatalf("--json printed %s (%v), want the cancelled execution", s.stdout.String(), err)
	}
	list, err := sdkClient(t, base).ListEvents(context.Background(), final.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	last := list.Events[len(list.Events)-1]
	if last.Type != api.StandardEventTypeRunCancelled || deref(typed(last.Data.AsRunCancelledData()).Reason) != cancelReason {
		t.Errorf("last event %s %v", last.Type, last.Data)
	}
}

func TestCommands(t *testing.T) {
	base := serve(t)
	c := sdkClient(t, base)
	ctx := context.Background()

	s := ctl(t, base, "", 0, "conversation", "create", "--metadata", `{"ticket":"OPS-42"}`, "--json")
	s.expect(t, exitOK)
	var conv api.Conversation
	if err := json.Unmarshal(s.stdout.Bytes(), &conv); err != nil || conv.Metadata["ticket"] != "OPS-42" {
		t.Fatalf("conversation create printed %s", s.stdout.String())
	}
	s = ctl(t, base, "", 0, "conversation", "get", conv.ID)
	s.expect(t, exitOK)
	if !strings.Contains(s.stdout.String(), conv.ID) || !strings.Contains(s.stdout.String(), `{"ticket":"OPS-42"}`) {
		t.Errorf("conversation get printed:\n%s", s.stdout.String())
	}

	// An execution waiting for approval, answered with respond.
	exec, err := c.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "x",
		Config: api.JSONObject{"requireApproval": true}})
	if err != nil {
		t.Fatal(err)
	}
	actionID := waitForAction(t, c, exec.ID)
	s = ctl(t, base, "", 0, "get", exec.ID)
	s.expect(t, exitOK)
	if !strings.Contains(s.stdout.String(), "state:         awaiting_approval") {
		t.Errorf("get printed:\n%s", s.stdout.String())
	}
	s = ctl(t, base, "", 0, "respond", "--approve", "--metadata", `{"by":"test"}`, exec.ID, actionID)
	s.expect(t, exitOK)
	if final, err := c.WaitForTerminal(ctx, exec.ID); err != nil || final.State != api.ExecutionStateSucceeded {
		t.Fatalf("after respond --approve: %v %v", final.State, err)
	}
	s = ctl(t, base, "", 0, "respond", "--approve", exec.ID, actionID)
	s.expect(t, exitError)
	if !strings.Contains(s.stderr.String(), "ACTION_ALREADY_RESOLVED") {
		t.Errorf("second respond: %s", s.stderr.String())
	}

	// Another one, cancelled with a reason.
	exec, err = c.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "x",
		Config: api.JSONObject{"requireApproval": true}})
	if err != nil {
		t.Fatal(err)
	}
	waitForAction(t, c, exec.ID)
	s = ctl(t, base, "", 0, "cancel", "--json", "--reason", "wrong branch", exec.ID)
	s.expect(t, exitOK)
	var cancelled api.Execution
	if err := json.Unmarshal(s.stdout.Bytes(), &cancelled); err != nil || cancelled.State != api.ExecutionStateCancelled {
		t.Fatalf("cancel printed %s", s.stdout.String())
	}

	s = ctl(t, base, "", 0, "events", "--after", "1", exec.ID)
	s.expect(t, exitOK)
	lines := strings.Split(strings.TrimSpace(s.stdout.String()), "\n")
	if !strings.Contains(lines[0], `"sequence":2`) || !strings.Contains(lines[len(lines)-1], `"reason":"wrong branch"`) {
		t.Errorf("events --after 1 printed:\n%s", s.stdout.String())
	}

	s = ctl(t, base, "", 0, "capabilities")
	s.expect(t, exitOK)
	if !strings.Contains(s.stdout.String(), "action.approval            native") {
		t.Errorf("capabilities printed:\n%s", s.stdout.String())
	}
	s = ctl(t, base, "", 0, "--json", "runtime")
	s.expect(t, exitOK)
	var d api.RuntimeDescription
	if err := json.Unmarshal(s.stdout.Bytes(), &d); err != nil || d.Providers[0].ID != "mock" {
		t.Errorf("runtime --json printed %s", s.stdout.String())
	}
}

func TestCommandLineErrors(t *testing.T) {
	base := serve(t)
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{nil, exitUsage, "Commands:"},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{[]string{"run"}, exitUsage, "INPUT is missing"},
		{[]string{"run", "--config", "[1]", "x"}, exitUsage, "--config must be a JSON object"},
		{[]string{"respond", "--approve", "--deny", "e", "a"}, exitUsage, "contradict"},
		{[]string{"get"}, exitUsage, "want exactly one EXECUTION_ID"},
		{[]string{"get", "exec_missing"}, exitError, "404 NOT_FOUND: Execution not found: exec_missing"},
		{[]string{"run", "--provider", "nope", "x"}, exitError, "PROVIDER_NOT_FOUND"},
		{[]string{"--base", "ftp://x", "runtime"}, exitError, "want http(s)://"},
	} {
		s := ctl(t, base, "", 0, tc.args...)
		if s.code != tc.code || !strings.Contains(s.stderr.String(), tc.says) {
			t.Errorf("harnessctl %v: exit code %d, stderr:\n%s\nwant %d and %q", tc.args, s.code, s.stderr.String(), tc.code, tc.says)
		}
	}
	// Help is not an error, goes to stdout, and every command has examples.
	for _, cmd := range (&app{}).newRoot(&globals{}).Commands() {
		name := cmd.Name()
		s := ctl(t, base, "", 0, "help", name)
		if s.code != exitOK || !strings.Contains(s.stdout.String(), "Examples:") || !strings.Contains(s.stdout.String(), "harnessctl "+name) {
			t.Errorf("help %s: exit code %d:\n%s", name, s.code, s.stdout.String())
		}
	}
}

// waitForAction follows the execution until it asks for approval and returns the action id.
func waitForAction(t *testing.T, c *sdk.Client, id string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for e, err := range c.Events(ctx, id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == api.StandardEventTypeActionRequired {
			return typed(e.Data.AsActionRequest()).ID
		}
	}
	t.Fatal("the execution ended without asking for approval")
	return ""
}
