package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// firstHourPages are the pages whose shell blocks a newcomer runs in the first hour: the README
// and the first page of its operator's path (the later pages describe production setups: TLS,
// clusters, agents). A page added here must mark what cannot run.
var firstHourPages = []string{"README.md", "docs/configuration.md"}

// TestReadmeShellBlocks runs every ```sh block of the first hour's pages, in order and in one
// bash session (a later block uses the variables of an earlier one, as in a terminal), with
// `bash -euo pipefail` against the real binary started from examples/Caddyfile on free ports,
// with its data in a temporary directory. Only the addresses are rewritten (4310 and Caddy's
// admin port 2019 to the free ports; bin/caddy and examples/ to the built binary and the clone's
// files). A block marked `<!-- not run: reason -->` is listed with its reason; every other one
// must exit 0 and print what its `<!-- expect: … -->` lines say.
func TestReadmeShellBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	for _, tool := range []string{"bash", "curl", "sed", "grep"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the README's commands need %s: %v", tool, err)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var run []docBlock
	var where []string
	for _, page := range firstHourPages {
		text, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range docBlocks(string(text)) {
			switch {
			case b.lang != "sh":
			case b.notRun != "":
				t.Logf("not run: %s:%d: %s", page, b.line, b.notRun)
			default:
				run = append(run, b)
				where = append(where, fmt.Sprintf("%s:%d", page, b.line))
			}
		}
	}
	if len(run) == 0 {
		t.Fatal("no runnable sh block in the first hour's pages")
	}

	bin := buildCaddy(t)
	env := instanceEnv(t)
	srv := startCaddy(t, bin, env)
	admin := lookup(env, "HARNESS_ADMIN")
	rewrite := strings.NewReplacer(
		"http://127.0.0.1:4310", srv.url,
		"localhost:2019", admin,
		"bin/caddy ", bin+" ",
		"examples/", filepath.Join(root, "examples")+"/",
	)
	// Each block is announced on a line of its own (a stream may end without a newline), so the
	// output splits by block and a failure names one.
	// Every block starts in the same directory (where files a block writes, a backup, land),
	// whatever an earlier one cd'ed to, as if pasted into a fresh terminal at the clone.
	work := t.TempDir()
	var script strings.Builder
	for i, b := range run {
		fmt.Fprintf(&script, "cd %q\nprintf '\\n@@block %d@@\\n'\n%s", work, i, rewrite.Replace(b.body))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script.String())
	cmd.Dir = work
	cmd.Env = env
	out, runErr := cmd.CombinedOutput()

	outputs := blockOutputs(string(out), len(run))
	if runErr != nil {
		last := len(outputs) - 1
		for last > 0 && outputs[last] == nil {
			last--
		}
		t.Fatalf("the block at %s failed: %v\n--- block\n%s--- its output\n%s\n--- server log\n%s",
			where[last], runErr, run[last].body, derefOr(outputs[last]), srv.log.String())
	}
	for i, b := range run {
		for _, want := range b.expects {
			if !strings.Contains(derefOr(outputs[i]), want) {
				t.Errorf("the block at %s printed no %q\n--- its output\n%s", where[i], want, derefOr(outputs[i]))
			}
		}
	}
	srv.stop(t)
}

var blockMarker = regexp.MustCompile(`(?m)^@@block (\d+)@@\n`)

// blockOutputs splits the session's output by block; a block that never started is nil.
func blockOutputs(out string, n int) []*string {
	outputs := make([]*string, n)
	marks := blockMarker.FindAllStringSubmatchIndex(out, -1)
	for k, m := range marks {
		var i int
		fmt.Sscan(out[m[2]:m[3]], &i)
		end := len(out)
		if k+1 < len(marks) {
			end = marks[k+1][0]
		}
		s := out[m[1]:end]
		outputs[i] = &s
	}
	return outputs
}

func derefOr(s *string) string {
	if s == nil {
		return "(the block did not start)"
	}
	return *s
}

// TestReadmeGoBlocksCompile compiles every ```go block of README.md as the body of a function
// with a ctx and an SDK client in scope (how the README introduces them), with the SDK's
// packages imported, in a package of the server module built through an overlay so nothing is
// written into the clone (compileGoBlocks, shared with the docs pages' test).
func TestReadmeGoBlocksCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build; run without -short")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if n := compileGoBlocks(t, root, []string{"README.md"}); n["README.md"] == 0 {
		t.Fatal("README.md has no go block; drop this test or the README lost its SDK example")
	}
}

// TestSDKConsumerBuildsAsDocumented builds examples/sdk-consumer the two ways the README runs it,
// straight from the clone with nothing tidied first: inside the workspace, and as its own module
// (GOWORK=off, the go.sum it has, no module proxy).
func TestSDKConsumerBuildsAsDocumented(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build; run without -short")
	}
	dir, err := filepath.Abs("../../examples/sdk-consumer")
	if err != nil {
		t.Fatal(err)
	}
	for _, gowork := range []string{"", "off"} {
		cmd := exec.CommandContext(t.Context(), "go", "build", "-o", filepath.Join(t.TempDir(), "sdk-consumer"), ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK="+gowork, "GOPROXY=off", "GOFLAGS=-mod=readonly")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("GOWORK=%q go build in examples/sdk-consumer: %v\n%s", gowork, err, out)
		}
	}
}
