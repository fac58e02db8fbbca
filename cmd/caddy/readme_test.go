package main

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestReadmeWalkthrough runs the README's quick-start curl commands verbatim (only the port is
// changed) with bash against the real binary started from examples/Caddyfile, as a newcomer
// pastes them: start and stream, answer an approval through the snapshot's pendingAction, list
// artifacts and executions, cancel with a reason.
func TestReadmeWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	for _, tool := range []string{"bash", "curl", "sed", "grep"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the README's walkthrough needs %s: %v", tool, err)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	script := quickStartShell(t, string(readme))
	srv := startCaddy(t, buildCaddy(t), instanceEnv(t))
	script = strings.ReplaceAll(script, "http://127.0.0.1:4310", srv.url)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-eu", "-c", script)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's walkthrough failed: %v\n--- script\n%s\n--- output\n%s", err, script, out)
	}
	for _, want := range []string{
		`"protocolVersion":"2026-09-02"`,
		"event: run.completed",
		`"state":"awaiting_approval"`,
		`"pendingAction":{`,
		`"state":"running"`, // the answer to the approval
		`"name":"report.txt"`,
		`"executions":[`,
		`"state":"cancelled"`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the walkthrough's output lacks %s\n--- output\n%s", want, out)
		}
	}
	srv.stop(t)
}

// quickStartShell is the README's sh blocks from "Open the web console" to the next section that
// is not the walkthrough ("Only want the server or the CLI?").
func quickStartShell(t *testing.T, readme string) string {
	t.Helper()
	start := strings.Index(readme, "or try the API while `make run` is up")
	end := strings.Index(readme, "Only want the server or the CLI?")
	if start < 0 || end < start {
		t.Fatal("README.md: the quick-start walkthrough moved; update this test")
	}
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(readme[start:end], -1)
	if len(blocks) < 3 {
		t.Fatalf("README.md: %d sh blocks in the walkthrough, want 3", len(blocks))
	}
	var b strings.Builder
	for _, m := range blocks {
		b.WriteString(m[1])
	}
	return b.String()
}
