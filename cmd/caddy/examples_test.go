package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/internal/a2atest"
	"github.com/harness-edge/harness-edge/internal/testutil"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// TestExamplesStartUnprivileged starts every examples/*.Caddyfile with the real binary, as an
// ordinary user (nobody, when the test runs as root as in CI), on free ports with a temporary
// data directory and home. Each must answer GET /v1/runtime with 200 over HTTP/2 (h2c on the
// plain loopback examples, TLS verified against Caddy's internal CA on the HTTPS ones), list its
// providers, log no "HTTP/2 skipped"/"HTTP/3 skipped" warning (except for public.Caddyfile's
// port-80 redirects, plain HTTP by design), and exit cleanly on SIGTERM.
// A new example without an entry in exampleStarts fails the test, so none goes untested.
func TestExamplesStartUnprivileged(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)
	as := unprivilegedUser(t, bin)
	files, err := filepath.Glob("../../examples/*Caddyfile")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example Caddyfiles: %v", err)
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			spec, ok := exampleStarts[name]
			if !ok {
				t.Fatalf("%s has no entry in exampleStarts: say how the test starts it", name)
			}
			inst := newExampleInstance(t, bin, as)
			spec(inst)
			srv, rt := inst.start(file)
			if !slices.Equal(providerIDs(rt), inst.providers) {
				t.Errorf("providers %v, want %v", providerIDs(rt), inst.providers)
			}
			for _, warning := range []string{"HTTP/2 skipped", "HTTP/3 skipped"} {
				if !inst.redirects && strings.Contains(srv.log.String(), warning) {
					t.Errorf("the start-up log has %q:\n%s", warning, srv.log.String())
				}
			}
			srv.stop(t)
		})
	}
}

// exampleStarts says, per example, what the test gives it through the environment.
var exampleStarts = map[string]func(*exampleInstance){
	"Caddyfile": func(in *exampleInstance) { in.plain("mock") },
	"tenants.Caddyfile": func(in *exampleInstance) {
		in.plain("mock")
		in.env = append(in.env, "HARNESS_ALICE_HASH="+in.hash("alice's password"), "HARNESS_BOB_HASH="+in.hash("bob's password"))
		in.user, in.password = "alice", "alice's password"
	},
	// The agent is the A2A test agent on the official JavaScript SDK (internal/a2atest).
	"a2a.Caddyfile": func(in *exampleInstance) {
		in.plain("a2a")
		in.env = append(in.env, "HARNESS_A2A_URL="+a2atest.Start(in.t).URL)
	},
	"remote.Caddyfile": func(in *exampleInstance) {
		in.plain("mock")
		upstream := newExampleInstance(in.t, in.bin, in.as)
		upstream.plain("mock")
		srv, _ := upstream.start("../../examples/Caddyfile")
		in.t.Cleanup(func() { srv.stop(in.t) })
		in.env = append(in.env, "HARNESS_UPSTREAM_URL="+upstream.base)
	},
	// A node of a cluster needs its database: a throw-away PostgreSQL (internal/pgtest).
	"cluster.Caddyfile": func(in *exampleInstance) {
		in.plain("mock")
		in.env = append(in.env, "HARNESS_DATABASE_URL="+clusterDatabase(in.t), "HARNESS_NODE=example")
	},
	// The balancer only needs two upstreams that answer /healthz and /v1/runtime: two
	// single-node servers (examples/Caddyfile) stand in for the nodes here; TestClusterThroughLoadBalancer
	// runs it in front of real cluster nodes.
	"cluster-lb.Caddyfile": func(in *exampleInstance) {
		in.plain("mock")
		for _, name := range []string{"HARNESS_NODE_A", "HARNESS_NODE_B"} {
			upstream := newExampleInstance(in.t, in.bin, in.as)
			upstream.plain("mock")
			srv, _ := upstream.start("../../examples/Caddyfile")
			in.t.Cleanup(func() { srv.stop(in.t) })
			in.env = append(in.env, name+"="+strings.TrimPrefix(upstream.base, "http://"))
		}
	},
	// The agents are not needed to start: the provider's start-up probe (initialize) must not
	// fetch them with npx here, so the server's PATH holds no npx; the probe fails at once and
	// the providers are served, continuity unsupported until an agent answers.
	"acp-claude.Caddyfile": func(in *exampleInstance) {
		in.plain("claude")
		in.env = append(in.env, "ACP_WORKSPACE="+in.dir, "ANTHROPIC_API_KEY=unused", "PATH="+in.dir)
	},
	"acp-gemini.Caddyfile": func(in *exampleInstance) {
		in.plain("gemini", "gemini-flash")
		in.env = append(in.env, "ACP_WORKSPACE="+in.dir, "GEMINI_API_KEY=unused", "PATH="+in.dir)
	},
	"local-tls.Caddyfile": func(in *exampleInstance) {
		port := freePort(in.t)
		in.env = append(in.env, "HARNESS_TLS_PORT="+port)
		in.base, in.tls, in.providers = "https://localhost:"+port, true, []string{"mock"}
	},
	// Its ports and domain are placeholders whose defaults are Caddy's own (80, 443); for
	// "localhost" Caddy issues the certificate from its internal CA instead of ACME.
	"public.Caddyfile": func(in *exampleInstance) {
		port := freePort(in.t)
		in.env = append(in.env, "HARNESS_DOMAIN=localhost", "ACME_EMAIL=ops@example.com",
			"HARNESS_HTTP_PORT="+freePort(in.t), "HARNESS_HTTPS_PORT="+port,
			"HARNESS_PASSWORD_HASH="+in.hash("a long random secret"))
		in.base, in.tls, in.providers = "https://localhost:"+port, true, []string{"mock"}
		in.user, in.password = "harness", "a long random secret"
		in.redirects = true
	},
}

// exampleInstance is one example being started: its environment, where it answers and how.
type exampleInstance struct {
	t              *testing.T
	bin            string
	as             *syscall.Credential // nil: the test's own user
	dir            string              // working directory, home and data, writable by `as`
	admin          string              // Caddy's admin address (unused by examples with admin off)
	env            []string
	base           string // the API's base URL
	tls            bool   // HTTPS with Caddy's internal CA, whose root the admin API gives
	user, password string // basic auth, if the example requires it
	providers      []string
	// The example serves Caddy's HTTP→HTTPS redirects on a plain-HTTP port, for which Caddy
	// logs that it skipped HTTP/2 and HTTP/3 (they need TLS): expected there.
	redirects bool
}

func newExampleInstance(t *testing.T, bin string, as *syscall.Credential) *exampleInstance {
	dir := writableDir(t, as)
	admin := "localhost:" + freePort(t)
	return &exampleInstance{t: t, bin: bin, as: as, dir: dir, admin: admin, env: append(os.Environ(),
		"HOME="+dir,
		"XDG_DATA_HOME="+filepath.Join(dir, "data"),
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
		"HARNESS_DATA_DIR="+filepath.Join(dir, "harness"),
		"HARNESS_ADMIN="+admin,
	)}
}

// plain is a plain-HTTP loopback example on a free port.
func (in *exampleInstance) plain(providers ...string) {
	port := freePort(in.t)
	in.env = append(in.env, "HARNESS_PORT="+port)
	in.base, in.providers = "http://127.0.0.1:"+port, providers
}

// hash is a bcrypt hash at the lowest cost, which keeps the race-instrumented server quick.
func (in *exampleInstance) hash(password string) string {
	out, err := exec.Command(in.bin, "hash-password", "--plaintext", password, "--bcrypt-cost", "4").Output()
	if err != nil {
		in.t.Fatalf("caddy hash-password: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// start runs the example and waits until GET /v1/runtime answers 200 over HTTP/2.
func (in *exampleInstance) start(caddyfile string) (*server, api.RuntimeDescription) {
	t := in.t
	t.Helper()
	abs, err := filepath.Abs(caddyfile)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(in.bin, "run", "--config", abs, "--adapter", "caddyfile")
	cmd.Env, cmd.Dir = in.env, in.dir
	if in.as != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: in.as}
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	srv := &server{cmd: cmd, url: in.base, exited: make(chan error, 1), log: &testutil.LockedBuffer{}}
	go func() {
		_, _ = io.Copy(srv.log, bufio.NewReader(stderr))
		srv.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	})

	deadline := time.Now().Add(time.Minute) // only keeps a broken example from hanging the run
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case err := <-srv.exited:
			srv.exited <- err // for stop
			t.Fatalf("caddy exited before answering: %v\n%s", err, srv.log.String())
		case <-time.After(100 * time.Millisecond):
		}
		// Not before the config is loaded: the admin API's /pki/ca/local provisions a CA of its
		// own when the pki app is not running yet, racing the server's for the same storage.
		if !strings.Contains(srv.log.String(), `"serving initial configuration"`) {
			continue
		}
		var rt api.RuntimeDescription
		if rt, lastErr = in.runtime(); lastErr == nil {
			return srv, rt
		}
	}
	t.Fatalf("%s did not answer GET /v1/runtime: %v\n%s", in.base, lastErr, srv.log.String())
	return nil, api.RuntimeDescription{}
}

// runtime asks GET /v1/runtime over HTTP/2 and requires 200.
func (in *exampleInstance) runtime() (api.RuntimeDescription, error) {
	var rt api.RuntimeDescription
	client, err := in.http2Client()
	if err != nil {
		return rt, err
	}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, in.base+"/v1/runtime", nil)
	if err != nil {
		return rt, err
	}
	if in.user != "" {
		req.SetBasicAuth(in.user, in.password)
	}
	resp, err := client.Do(req)
	if err != nil {
		return rt, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return rt, fmt.Errorf("status %s: %s", resp.Status, body)
	}
	if resp.ProtoMajor != 2 {
		in.t.Fatalf("GET /v1/runtime answered over %s, want HTTP/2", resp.Proto)
	}
	return rt, json.Unmarshal(body, &rt)
}

// http2Client speaks only HTTP/2: prior-knowledge h2c for http:// and, for https://, TLS
// verified against the root of Caddy's internal CA, fetched from the admin API.
func (in *exampleInstance) http2Client() (*http.Client, error) {
	var protocols http.Protocols
	transport := &http.Transport{Protocols: &protocols}
	if !in.tls {
		protocols.SetUnencryptedHTTP2(true)
		return &http.Client{Transport: transport}, nil
	}
	protocols.SetHTTP2(true)
	roots, err := in.internalRoot()
	if err != nil {
		return nil, err
	}
	transport.TLSClientConfig = &tls.Config{RootCAs: roots}
	return &http.Client{Transport: transport}, nil
}

func (in *exampleInstance) internalRoot() (*x509.CertPool, error) {
	resp, err := http.Get("http://" + in.admin + "/pki/ca/local")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var ca struct {
		Root string `json:"root_certificate"`
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("admin API /pki/ca/local: %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&ca); err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(ca.Root)) {
		return nil, fmt.Errorf("no certificate in the admin API's root_certificate")
	}
	return roots, nil
}

func providerIDs(rt api.RuntimeDescription) []string {
	var ids []string
	for _, p := range rt.Providers {
		ids = append(ids, p.ID)
	}
	return ids
}

// unprivilegedUser is the user the examples run as: nobody when the test runs as root (as in
// CI), so an example that needs root (a port below 1024, a root-owned path) fails here; nil
// (the test's own user) otherwise. nobody must be able to run the binary in its build directory.
func unprivilegedUser(t *testing.T, bin string) *syscall.Credential {
	if os.Geteuid() != 0 {
		return nil
	}
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	return &syscall.Credential{Uid: 65534, Gid: 65534}
}

// writableDir is a temporary directory owned by the user the example runs as. Its parent,
// t.TempDir(), is root's and mode 0700, hence opened to others for the path to be reachable.
func writableDir(t *testing.T, as *syscall.Credential) string {
	parent := t.TempDir()
	dir := filepath.Join(parent, "instance")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if as != nil {
		for _, p := range []string{filepath.Dir(parent), parent} {
			if err := os.Chmod(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chown(dir, int(as.Uid), int(as.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
