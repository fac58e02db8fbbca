package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The end-to-end cases of harnessctl's interactive and scripted behaviour, run by TestEndToEnd
// against the real bin/caddy (e2e is what they share).

type e2e struct {
	dir, caddyBin, ctlBin, base string
	client                      *sdk.Client
}

// ctlResult is a harnessctl run without a terminal.
type ctlResult struct {
	stdout, stderr string
	code           int
}

// runCtlSplit runs harnessctl to completion without a terminal (stdin is /dev/null), keeping
// stdout and stderr apart.
func runCtlSplit(t *testing.T, bin, base string, args ...string) ctlResult {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HARNESS_URL="+base)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatal(err)
	}
	return ctlResult{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
}

func (r ctlResult) expect(t *testing.T, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
}

// startForApproval starts an execution that waits for approval and returns it with its action.
func (e *e2e) startForApproval(t *testing.T, config api.JSONObject) (execID, actionID string) {
	t.Helper()
	ctx := context.Background()
	conv, err := e.client.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	exec, err := e.client.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "watched", Config: config})
	if err != nil {
		t.Fatal(err)
	}
	return exec.ID, waitForAction(t, e.client, exec.ID)
}

// testFlagsAfterInput: flags after the input are flags (the mock asks for approval only when
// --config says so), not words of the input.
func (e *e2e) testFlagsAfterInput(t *testing.T) {
	term := startInTerminal(t, e.ctlBin, e.base, "run", "deploy the site", "--config", `{"requireApproval":true}`)
	term.waitFor(t, "[y/N] ")
	term.write(t, "y\n")
	if code := term.wait(t); code != exitOK {
		t.Fatalf("exit code %d; terminal:\n%s", code, term.output())
	}
	exec, err := e.client.GetExecution(context.Background(), term.executionID(t))
	if err != nil {
		t.Fatal(err)
	}
	if exec.Input != "deploy the site" || exec.EffectiveConfig["requireApproval"] != true {
		t.Errorf("input %q config %v, want the input alone and requireApproval", exec.Input, exec.EffectiveConfig)
	}
}

// testUnknownFlagRejected: a stray flag is a usage error (exit 2, usage on stderr) and nothing
// reaches the server: the idempotency key the command carried is still free afterwards.
func (e *e2e) testUnknownFlagRejected(t *testing.T) {
	ctx := context.Background()
	conv, err := e.client.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	key := "unknown-flag-" + conv.ID
	r := runCtlSplit(t, e.ctlBin, e.base, "run", "--key", key, "--conversation", conv.ID, "hello", "--frobnicate")
	r.expect(t, exitUsage)
	if r.stdout != "" || !strings.Contains(r.stderr, "unknown flag: --frobnicate") || !strings.Contains(r.stderr, "Usage:") || !strings.Contains(r.stderr, "--config") {
		t.Errorf("stdout %q, stderr:\n%s\nwant the error and run's usage on stderr only", r.stdout, r.stderr)
	}
	// Had harnessctl started "hello --frobnicate" under key, another request with that key would
	// be an IDEMPOTENCY_CONFLICT.
	exec, err := e.client.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "probe", IdempotencyKey: &key})
	if err != nil || exec.Input != "probe" {
		t.Fatalf("the key was used: %v (input %q)", err, exec.Input)
	}
}

// testPromptWithdrawnWhenAnsweredElsewhere: with the question on the terminal, the action is
// approved through the SDK; the question is withdrawn with the reason, and the next question
// (input) takes the line typed for it: the read left waiting by the withdrawn question serves
// the new one.
func (e *e2e) testPromptWithdrawnWhenAnsweredElsewhere(t *testing.T) {
	term := startInTerminal(t, e.ctlBin, e.base, "run", "--config", `{"requireApproval":true,"requestInput":true}`, "answered elsewhere")
	term.waitFor(t, "[y/N] ")
	id := term.executionID(t)
	actionID := waitForAction(t, e.client, id)
	if _, err := e.client.RespondToAction(context.Background(), id, actionID, api.ActionResponse{Approved: new(true)}); err != nil {
		t.Fatal(err)
	}
	term.waitFor(t, "no longer asking about "+actionID+": it was approved elsewhere")
	term.waitFor(t, "? Provide mock input: ")
	term.write(t, "blue\n")
	if code := term.wait(t); code != exitOK {
		t.Fatalf("exit code %d; terminal:\n%s", code, term.output())
	}
	if out := term.output(); !strings.Contains(out, "Echo: answered elsewhere blue") {
		t.Errorf("terminal:\n%s\nwant the output with the input typed", out)
	}
}

// testPromptWithdrawnWhenCancelledElsewhere: the execution is cancelled through the SDK while
// the question is open; harnessctl withdraws it and exits with the cancelled code.
func (e *e2e) testPromptWithdrawnWhenCancelledElsewhere(t *testing.T) {
	term := startInTerminal(t, e.ctlBin, e.base, "run", "--config", `{"requireApproval":true}`, "cancelled elsewhere")
	term.waitFor(t, "[y/N] ")
	id := term.executionID(t)
	if _, err := e.client.CancelExecution(context.Background(), id, api.CancelExecutionRequest{}); err != nil {
		t.Fatal(err)
	}
	if code := term.wait(t); code != exitCancelled {
		t.Fatalf("exit code %d; terminal:\n%s", code, term.output())
	}
	if out := term.output(); !strings.Contains(out, "the execution ended (run.cancelled)") {
		t.Errorf("terminal:\n%s\nwant the question withdrawn because the execution ended", out)
	}
}

// testApproveNonInteractive: --approve and --input answer without a terminal (stdin is
// /dev/null: a question would have cancelled the run).
func (e *e2e) testApproveNonInteractive(t *testing.T) {
	r := runCtlSplit(t, e.ctlBin, e.base, "run", "--approve", "--input", "blue", "--config", `{"requireApproval":true,"requestInput":true}`, "hi")
	r.expect(t, exitOK)
	if r.stdout != "Echo: hi blue\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	if !strings.Contains(r.stderr, `approved "Approve mock execution" (--approve)`) || !strings.Contains(r.stderr, `with "blue" (--input)`) {
		t.Errorf("stderr lacks the notices:\n%s", r.stderr)
	}
	id := startedLine.FindStringSubmatch(r.stderr)[1]
	var approved, valued bool
	for _, ev := range replay(t, e.client, id) {
		if ev.Type == api.StandardEventTypeActionResponded {
			approved = approved || deref(typed(ev.Data.AsActionRespondedData()).Approved)
		}
		if ev.Type == api.StandardEventTypeActionRequired {
			valued = valued || typed(ev.Data.AsActionRequest()).Kind == "input"
		}
	}
	if !approved || !valued {
		t.Errorf("the events show approved %v, an input request %v", approved, valued)
	}
}

// testArtifactsListed: run names the artifact at the end; artifacts and get list it.
func (e *e2e) testArtifactsListed(t *testing.T) {
	r := runCtlSplit(t, e.ctlBin, e.base, "run", "--config", `{"artifactName":"report.txt"}`, "with an artifact")
	r.expect(t, exitOK)
	id := startedLine.FindStringSubmatch(r.stderr)[1]
	if !strings.Contains(r.stderr, "harnessctl: artifact report.txt (text/plain) id artifact-"+id) {
		t.Errorf("run did not name the artifact:\n%s", r.stderr)
	}
	r = runCtlSplit(t, e.ctlBin, e.base, "artifacts", id)
	r.expect(t, exitOK)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "NAME") || !slices.Equal(strings.Fields(lines[1])[:4], []string{"report.txt", "text/plain", "artifact-" + id, "-"}) {
		t.Errorf("artifacts printed:\n%s", r.stdout)
	}
	r = runCtlSplit(t, e.ctlBin, e.base, "artifacts", "--json", id)
	r.expect(t, exitOK)
	var list api.ArtifactList
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list.Artifacts) != 1 || list.Artifacts[0].Name != "report.txt" {
		t.Errorf("artifacts --json printed %s (%v)", r.stdout, err)
	}
	r = runCtlSplit(t, e.ctlBin, e.base, "get", id)
	r.expect(t, exitOK)
	if !strings.Contains(r.stdout, "artifacts:     report.txt (text/plain) id artifact-"+id) {
		t.Errorf("get printed:\n%s", r.stdout)
	}
}

// testCtrlCNoTextAfterNotice: text still arriving after Ctrl-C (the mock streams a word every
// 2 ms, so some are on the way while the cancel travels) is not printed after the
// "cancelling" notice.
func (e *e2e) testCtrlCNoTextAfterNotice(t *testing.T) {
	var words []string
	for i := range 3000 {
		words = append(words, fmt.Sprintf("w%04d", i))
	}
	term := startInTerminal(t, e.ctlBin, e.base, "run", "--config", `{"delayMs":2}`, strings.Join(words, " "))
	term.waitFor(t, "w0010")
	term.write(t, "\x03")
	if code := term.wait(t); code != exitCancelled {
		t.Fatalf("exit code %d; terminal:\n%s", code, term.output())
	}
	out := term.output()
	notice := strings.Index(out, "cancelling execution")
	if notice < 0 {
		t.Fatalf("no cancelling notice:\n%s", out)
	}
	if late := regexp.MustCompile(`w\d{4}`).FindAllString(out[notice:], -1); len(late) > 0 {
		t.Errorf("%d words printed after the cancelling notice (%v …):\n%s", len(late), late[0], out[notice:])
	}
}

// testWatch: watch attaches to an execution waiting for approval, asks the open question,
// and exits with the run exit code; tail --deny answers without asking.
func (e *e2e) testWatch(t *testing.T) {
	id, _ := e.startForApproval(t, api.JSONObject{"requireApproval": true})
	term := startInTerminal(t, e.ctlBin, e.base, "watch", id)
	term.waitFor(t, "[y/N] ")
	term.write(t, "yes\n")
	if code := term.wait(t); code != exitOK {
		t.Fatalf("exit code %d; terminal:\n%s", code, term.output())
	}
	if out := term.output(); !strings.Contains(out, "watching execution "+id+" (awaiting_approval)") || !strings.Contains(out, "Echo: watched") {
		t.Errorf("terminal:\n%s", out)
	}

	id, _ = e.startForApproval(t, api.JSONObject{"requireApproval": true})
	r := runCtlSplit(t, e.ctlBin, e.base, "tail", "--deny", id)
	r.expect(t, exitFailed)
	if !strings.Contains(r.stderr, `denied "Approve mock execution" (--deny)`) || !strings.Contains(r.stderr, "not approved") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	// Watching an execution that has ended prints its text and exits with its code.
	r = runCtlSplit(t, e.ctlBin, e.base, "watch", id)
	r.expect(t, exitFailed)
}

// testCACert: against Caddy's "tls internal", --cacert with its root certificate works, and
// without it the error says what to do.
func (e *e2e) testCACert(t *testing.T) {
	dir := filepath.Join(e.dir, "tls")
	port := freePort(t)
	base := "https://localhost:" + port
	root := filepath.Join(dir, "xdg-data", "caddy", "pki", "authorities", "local", "root.crt")
	startCaddyWith(t, e.caddyBin, dir, "testdata/tls.Caddyfile", base, func() *x509.CertPool {
		pem, err := os.ReadFile(root)
		if err != nil {
			return nil
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		return pool
	}, "HARNESS_TLS_PORT="+port)

	r := runCtlSplit(t, e.ctlBin, base, "--cacert", root, "runtime")
	r.expect(t, exitOK)
	if !strings.Contains(r.stdout, "at "+base) {
		t.Errorf("runtime printed %s", r.stdout)
	}
	r = runCtlSplit(t, e.ctlBin, base, "run", "over tls", "--cacert", root)
	r.expect(t, exitOK)
	r = runCtlSplit(t, e.ctlBin, base, "runtime")
	r.expect(t, exitError)
	if !strings.Contains(r.stderr, "pass that CA's certificate with --cacert FILE") {
		t.Errorf("without --cacert, stderr:\n%s", r.stderr)
	}
}

// testPromptWithdrawnWhenServerRestarts: the server restarts while the question is open; the
// event stream reconnects, the execution is no longer waiting (recovery failed it), and the
// question is withdrawn without a key pressed.
func (e *e2e) testPromptWithdrawnWhenServerRestarts(t *testing.T) {
	dir := filepath.Join(e.dir, "restart")
	port := freePort(t)
	base := "http://127.0.0.1:" + port
	env := []string{"HARNESS_PORT=" + port, "HARNESS_ADMIN=off"}
	stop := startCaddyWith(t, e.caddyBin, dir, "../../examples/Caddyfile", base, nil, env...)
	term := startInTerminal(t, e.ctlBin, base, "run", "--config", `{"requireApproval":true}`, "restarted")
	term.waitFor(t, "[y/N] ")
	stop()
	startCaddyWith(t, e.caddyBin, dir, "../../examples/Caddyfile", base, nil, env...)
	if code := term.wait(t); code != exitFailed {
		t.Fatalf("exit code %d; terminal:\n%s", code, term.output())
	}
	out := term.output()
	if !strings.Contains(out, "no longer asking about") || !strings.Contains(out, "Runtime restarted before the execution finished") {
		t.Errorf("terminal:\n%s\nwant the question withdrawn and the failure", out)
	}
}
