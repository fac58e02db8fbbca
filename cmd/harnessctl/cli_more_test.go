package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// TestPrompterDropsStaleLine: a line completed after its question was withdrawn is not the
// answer to the next question; the next line is.
func TestPrompterDropsStaleLine(t *testing.T) {
	in, typing := io.Pipe()
	p := &prompter{in: in}
	lines, _ := p.open()
	p.close(lines) // withdrawn before the person pressed Enter
	if _, err := io.WriteString(typing, "y\n"); err != nil {
		t.Fatal(err)
	}
	// Wait until the reader is done with the line (it dropped it: no question was open).
	for guard := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		p.mu.Lock()
		reading := p.reading
		p.mu.Unlock()
		if !reading {
			break
		}
		if time.Now().After(guard) { // a hang guard only
			t.Fatal("the reader never took the line")
		}
	}
	next, _ := p.open()
	go io.WriteString(typing, "blue\n")
	select {
	case line := <-next:
		if line != "blue" {
			t.Fatalf("the next question got %q, want the line typed for it", line)
		}
	case <-time.After(time.Minute): // a hang guard only
		t.Fatal("no line")
	}
	select {
	case line := <-lines:
		t.Fatalf("the withdrawn question got %q", line)
	default:
	}
}

// TestPrompterEndOfInput: the end of input is announced to the question waiting.
func TestPrompterEndOfInput(t *testing.T) {
	p := &prompter{in: strings.NewReader("")}
	_, eof := p.open()
	select {
	case <-eof:
	case <-time.After(time.Minute): // a hang guard only
		t.Fatal("end of input not announced")
	}
}

// TestUsageErrorsSendNothing: a bad command line reaches no server.
func TestUsageErrorsSendNothing(t *testing.T) {
	var requests atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { requests.Add(1) }))
	defer hs.Close()
	for _, args := range [][]string{
		{"run", "hello", "--frobnicate"},
		{"run", "hello", "--config", `{"requireApproval":true}`, "-x"},
		{"run", "--approve", "--deny", "hello"},
		{"watch", "--input"},
		{"run"},
		{"conversation"},
		{"artifacts"},
	} {
		s := ctl(t, hs.URL, "", 0, args...)
		if s.code != exitUsage || !strings.Contains(s.stderr.String(), "Usage:") || s.stdout.Len() != 0 {
			t.Errorf("harnessctl %v: exit code %d, stdout %q, stderr:\n%s\nwant 2 and the usage on stderr", args, s.code, s.stdout.String(), s.stderr.String())
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the server", n)
	}
}

// TestWrongBaseURLExplained: a base URL that answers 200 with HTML (a web site, a wrong path
// prefix) is explained: what was asked where, and what was expected.
func TestWrongBaseURLExplained(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/empty/v1/runtime" {
			return // 200, no body, no Content-Type
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<html>welcome</html>")
	}))
	defer hs.Close()
	s := ctl(t, hs.URL+"/site", "", 0, "runtime")
	s.expect(t, exitError)
	want := "GET " + hs.URL + "/site/v1/runtime answered 200 OK with Content-Type text/html; charset=utf-8; a Harness Runtime API server answers JSON there"
	if !strings.Contains(s.stderr.String(), want) || !strings.Contains(s.stderr.String(), "is "+hs.URL+"/site the server's base URL (--base") {
		t.Errorf("stderr:\n%s\nwant %q and the question about the base URL", s.stderr.String(), want)
	}
	s = ctl(t, hs.URL+"/empty", "", 0, "runtime")
	s.expect(t, exitError)
	if !strings.Contains(s.stderr.String(), "/empty/v1/runtime answered 200 OK with no Content-Type") || strings.Contains(s.stderr.String(), "unexpected answer") {
		t.Errorf("stderr:\n%s", s.stderr.String())
	}
	s = ctl(t, hs.URL, "", 0, "run", "hello")
	s.expect(t, exitError)
	if !strings.Contains(s.stderr.String(), "POST "+hs.URL+"/v1/conversations answered 200 OK") {
		t.Errorf("run: stderr:\n%s", s.stderr.String())
	}
}

// TestVersionHelpCompletion: --version, help on stdout, and the completion scripts.
func TestVersionHelpCompletion(t *testing.T) {
	s := ctl(t, "http://127.0.0.1:1", "", 0, "--version")
	s.expect(t, exitOK)
	if !strings.HasPrefix(s.stdout.String(), "harnessctl version ") {
		t.Errorf("--version printed %q", s.stdout.String())
	}
	s = ctl(t, "http://127.0.0.1:1", "", 0, "--help")
	s.expect(t, exitOK)
	for _, want := range []string{"watch", "artifacts", "completion", "--cacert", "caddy/pki/authorities/local/root.crt"} {
		if !strings.Contains(s.stdout.String(), want) {
			t.Errorf("--help lacks %q:\n%s", want, s.stdout.String())
		}
	}
	for shell, want := range map[string]string{"bash": "__start_harnessctl", "zsh": "#compdef harnessctl", "fish": "complete -c harnessctl"} {
		s = ctl(t, "http://127.0.0.1:1", "", 0, "completion", shell)
		s.expect(t, exitOK)
		if !strings.Contains(s.stdout.String(), want) {
			t.Errorf("completion %s lacks %q", shell, want)
		}
	}
}

// TestWatchInterruptLeavesExecution: Ctrl-C stops watching (exit code 1) and does not cancel
// the execution, unlike run's.
func TestWatchInterruptLeavesExecution(t *testing.T) {
	base := serve(t)
	c := sdkClient(t, base)
	ctx := context.Background()
	conv, err := c.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	exec, err := c.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "x", Config: api.JSONObject{"delayMs": 600000}})
	if err != nil {
		t.Fatal(err)
	}
	s := ctl(t, base, "", 1, "watch", exec.ID)
	s.expect(t, exitError)
	if !strings.Contains(s.stderr.String(), "stopped watching; execution "+exec.ID+" goes on") {
		t.Errorf("stderr:\n%s", s.stderr.String())
	}
	got, err := c.GetExecution(ctx, exec.ID)
	if err != nil || sdk.IsTerminalState(got.State) || got.State == api.ExecutionStateCancelling {
		t.Errorf("execution %s (%v), want it still running", got.State, err)
	}
	if _, err := c.CancelExecution(ctx, exec.ID, api.CancelExecutionRequest{}); err != nil {
		t.Fatal(err)
	}
}

// TestCompleteProviders: completing run --provider asks the server for its providers.
func TestCompleteProviders(t *testing.T) {
	base := serve(t)
	s := ctl(t, base, "", 0, cobra.ShellCompRequestCmd, "run", "--provider", "")
	s.expect(t, exitOK)
	if lines := strings.Split(s.stdout.String(), "\n"); !strings.HasPrefix(lines[0], "mock\t") {
		t.Errorf("completion printed:\n%s", s.stdout.String())
	}
}
