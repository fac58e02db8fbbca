package main

import (
	"bufio"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/internal/testutil"
)

// TestBinarySecondServerOnAServedAddressRefuses: a second bin/caddy started on the address a
// first one serves — with its own admin address and data directory, so nothing else stops it —
// must refuse to start and name the address. Caddy binds its listeners with SO_REUSEPORT (so
// that a reload can bind the new config's listeners beside the old ones), which on Linux lets a
// second process of the same user bind the same port: without the check both serve, each from
// its own store, and the kernel spreads the connections between them. A reload of the first
// server (which binds the same address again, in the same process) must still work.
func TestBinarySecondServerOnAServedAddressRefuses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)
	env1 := instanceEnv(t)
	srv1 := startCaddy(t, bin, env1)
	c1 := &client{t: t, base: srv1.url}
	conv := c1.post("/v1/conversations", map[string]any{}, http.StatusCreated)

	// Another admin address and data directory, the same port.
	port := lookup(env1, "HARNESS_PORT")
	env2 := append(slices.Clone(instanceEnv(t)), "HARNESS_PORT="+port)
	out, served := runUntilListening(t, bin, env2)
	if served {
		t.Fatalf("the second server serves 127.0.0.1:%s beside the first:\n%s", port, out)
	}
	if want := "127.0.0.1:" + port; !strings.Contains(out, want) || !strings.Contains(out, "already") {
		t.Fatalf("the second server's refusal does not say that %s is already served:\n%s", want, out)
	}
	t.Logf("the second server refused:\n%s", out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:])

	// The first server reloads (binding its address again, in its own process) and serves on.
	reload := exec.Command(bin, "reload", "--force", "--config", exampleCaddyfile, "--adapter", "caddyfile",
		"--address", lookup(env1, "HARNESS_ADMIN"))
	reload.Env = env1
	if raw, err := reload.CombinedOutput(); err != nil {
		t.Fatalf("caddy reload of the first server: %v\n%s\nserver log:\n%s", err, raw, srv1.log.String())
	}
	if got := c1.get("/v1/conversations/" + conv["id"].(string)); got["id"] != conv["id"] {
		t.Fatalf("the first server after its reload: %v", got)
	}
	srv1.stop(t)
}

// runUntilListening runs `caddy run` with the example Caddyfile until it exits (served false)
// or announces where it listens (served true; it is then killed), and returns what it wrote.
func runUntilListening(t *testing.T, bin string, env []string) (output string, served bool) {
	t.Helper()
	cmd := exec.Command(bin, "run", "--config", exampleCaddyfile, "--adapter", "caddyfile")
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	log := &testutil.LockedBuffer{}
	listening := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			_, _ = log.Write([]byte(sc.Text() + "\n"))
			if listeningLine.MatchString(sc.Text()) {
				close(listening)
				break
			}
		}
		_, _ = io.Copy(log, stderr)
		_ = cmd.Wait()
	}()
	select {
	case <-exited:
		return log.String(), false
	case <-listening:
		_ = cmd.Process.Kill()
		<-exited
		return log.String(), true
	case <-time.After(time.Minute): // only keeps a broken binary from hanging the run
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("the second server neither listened nor exited:\n%s", log.String())
	}
	return "", false
}
