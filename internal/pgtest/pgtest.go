// Package pgtest starts throw-away PostgreSQL servers for tests: one shared server per test binary
// and a fresh database per test, so every package that needs PostgreSQL tests against the real
// engine without a running service, a password or any state left behind.
//
// Use it from a package's tests:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) } // stops the shared server and removes its files
//
//	func TestSomething(t *testing.T) {
//		dsn := pgtest.Start(t).NewDatabase(t) // a database of its own, dropped at the end of t
//		...
//	}
//
// The server is PostgreSQL 15 from Debian's packages (`apt-get install postgresql-15`; .ci/run
// installs it). When its binaries are missing, tests skip with that instruction, except under
// CI=true, where they fail: CI must run them.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Install is what to install when the PostgreSQL binaries are missing (Debian, Ubuntu).
const Install = "apt-get install postgresql-15"

// Options tune a cluster started by StartCluster.
type Options struct {
	// Durable keeps fsync and synchronous commit on, as a production server runs; benchmarks that
	// report durable figures want it. Off (the default), a commit skips the disk flush: tests are
	// faster and lose nothing they check, since the whole cluster is thrown away.
	Durable bool
}

// Cluster is a running PostgreSQL server in a temporary directory, listening on 127.0.0.1 (and on
// a Unix socket inside that directory), with trust authentication for the superuser "postgres".
type Cluster struct {
	// Port is the TCP port on 127.0.0.1.
	Port int

	dir     string
	data    string              // the data directory, kept across Restart
	bin     string              // where initdb and postgres are
	cred    *syscall.Credential // who runs the server (nil: ourselves)
	opts    Options
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the server process has ended
	nextDB  atomic.Int64
	down    atomic.Bool // Stop was called: databases go with the cluster
	stopErr error
	stopped sync.Once
}

var (
	sharedOnce sync.Once
	shared     *Cluster
	sharedErr  error
)

// Main runs the package's tests and then stops the shared cluster (when a test started it) and
// removes its files. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: stop the shared PostgreSQL: %v\n", err)
		}
	}
	os.Exit(code)
}

// Start returns the test binary's shared cluster, starting it on first use. Without PostgreSQL
// binaries it skips tb (fails it under CI=true). A package whose TestMain does not call Main still
// works: its server ends with the test binary (see Pdeathsig below), but its directory stays.
func Start(tb testing.TB) *Cluster {
	tb.Helper()
	bin := requireBinaries(tb)
	sharedOnce.Do(func() { shared, sharedErr = start(bin, Options{}) })
	if sharedErr != nil {
		tb.Fatalf("pgtest: start PostgreSQL: %v", sharedErr)
	}
	return shared
}

// StartCluster starts a cluster of tb's own with opts, stopped and removed when tb ends.
func StartCluster(tb testing.TB, opts Options) *Cluster {
	tb.Helper()
	bin := requireBinaries(tb)
	c, err := start(bin, opts)
	if err != nil {
		tb.Fatalf("pgtest: start PostgreSQL: %v", err)
	}
	tb.Cleanup(func() {
		if err := c.Stop(); err != nil {
			tb.Errorf("pgtest: stop PostgreSQL: %v", err)
		}
	})
	return c
}

// New starts a cluster outside a test (a command such as harness-nemesis); the caller Stops it.
func New(opts Options) (*Cluster, error) {
	bin, err := findBinaries()
	if err != nil {
		return nil, fmt.Errorf("%w; install PostgreSQL 15 with `%s`", err, Install)
	}
	return start(bin, opts)
}

// CreateDatabase creates the empty database name and returns its DSN; it goes with the cluster.
func (c *Cluster) CreateDatabase(name string) (string, error) {
	if err := c.exec("CREATE DATABASE " + pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("pgtest: create database %s: %w", name, err)
	}
	return c.DSN(name), nil
}

// RequireBinaries ends tb (a skip saying what to install; a failure under CI=true) when the
// PostgreSQL binaries are missing: for tests that start a server through New, out of process.
func RequireBinaries(tb testing.TB) { tb.Helper(); requireBinaries(tb) }

// requireBinaries finds the server binaries or ends tb with what to install.
func requireBinaries(tb testing.TB) string {
	tb.Helper()
	bin, err := findBinaries()
	if err == nil {
		return bin
	}
	msg := fmt.Sprintf("pgtest: %v; install PostgreSQL 15 with `%s`", err, Install)
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg + " (CI=true: tests that need PostgreSQL must run, so this fails)")
	}
	tb.Skip(msg)
	return ""
}

// findBinaries returns the directory holding initdb and postgres: Debian's versioned directory,
// else what pg_config reports, else wherever PATH has initdb.
func findBinaries() (string, error) {
	candidates := []string{"/usr/lib/postgresql/15/bin"}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		candidates = append(candidates, strings.TrimSpace(string(out)))
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		candidates = append(candidates, filepath.Dir(p))
	}
	for _, dir := range candidates {
		if isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	return "", fmt.Errorf("PostgreSQL server binaries (initdb, postgres) not found in %s or on PATH", strings.Join(candidates, ", "))
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// start runs initdb and then the server, on a free port, as an unprivileged user.
func start(bin string, opts Options) (*Cluster, error) {
	// Not t.TempDir: the Unix socket's path must stay under ~100 bytes, and the shared server
	// outlives any one test.
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	cred, err := serverUser(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--no-locale", "--no-sync")
	prepare(initdb, dir, cred)
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	// The port is free when we ask; another process may take it before the server binds it, so
	// a failed start is retried on a new port.
	var lastErr error
	for range 3 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		c, err := launch(bin, dir, data, cred, opts, port)
		if err == nil {
			return c, nil
		}
		lastErr = err
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

func launch(bin, dir, data string, cred *syscall.Credential, opts Options, port int) (*Cluster, error) {
	durability := "off"
	if opts.Durable {
		durability = "on"
	}
	logPath := filepath.Join(dir, "server.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644) // appended: Restart keeps the log
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child holds its own descriptor
	// The server runs as our child (not daemonized by pg_ctl), so it cannot outlive the test
	// binary: Pdeathsig stops it if the binary dies without calling Stop.
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data,
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+dir,
		"-c", "fsync="+durability,
		"-c", "synchronous_commit="+durability,
		"-c", "full_page_writes="+durability,
		"-c", "max_connections=300",
		"-c", "shared_buffers=64MB",
	)
	prepare(cmd, dir, cred)
	cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT // immediate shutdown
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	c := &Cluster{Port: port, dir: dir, data: data, bin: bin, cred: cred, opts: opts, cmd: cmd, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(c.exited) }()
	if err := c.waitReady(30 * time.Second); err != nil {
		c.kill()
		log, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("%w\nserver log:\n%s", err, log)
	}
	return c, nil
}

// waitReady polls until the server accepts connections, it exits, or timeout passes.
func (c *Cluster) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, c.DSN("postgres"))
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		select {
		case <-c.exited:
			return errors.New("postgres exited during start")
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres not ready after %s: %v", timeout, err)
		}
	}
}

// prepare runs cmd in dir, as cred (nil: as ourselves), with a plain environment.
func prepare(cmd *exec.Cmd, dir string, cred *syscall.Credential) {
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C", "TZ=UTC"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
}

// serverUser is who runs initdb and postgres. Both refuse to run as root, and CI runs as root:
// then they run as "nobody", owning dir. Otherwise they run as the current user.
func serverUser(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("running as root, and initdb refuses root: look up user nobody: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// DSN is the connection string of database name, as the superuser over TCP.
func (c *Cluster) DSN(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.Port, name)
}

var unsafeName = regexp.MustCompile(`[^a-z0-9_]+`)

// NewDatabase creates an empty database for tb and returns its DSN; the database is dropped when
// tb ends (connections still open are terminated first), unless the cluster was stopped.
func (c *Cluster) NewDatabase(tb testing.TB) string {
	tb.Helper()
	name := fmt.Sprintf("t%d_%s", c.nextDB.Add(1), unsafeName.ReplaceAllString(strings.ToLower(tb.Name()), "_"))
	if len(name) > 60 { // PostgreSQL's identifiers end at 63 bytes
		name = name[:60]
	}
	if err := c.exec("CREATE DATABASE " + pgx.Identifier{name}.Sanitize()); err != nil {
		tb.Fatalf("pgtest: create database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		if c.down.Load() {
			return // stopped (a test of an unreachable database): the files are gone already
		}
		if err := c.exec("DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize() + " WITH (FORCE)"); err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return c.DSN(name)
}

// exec runs one statement in the "postgres" database.
func (c *Cluster) exec(sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// Stop shuts the server down (fast shutdown: open sessions are ended) and removes its directory.
func (c *Cluster) Stop() error {
	c.stopped.Do(func() {
		c.down.Store(true)
		c.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-c.exited:
		case <-time.After(30 * time.Second):
			c.kill()
		}
		c.stopErr = os.RemoveAll(c.dir)
	})
	return c.stopErr
}

func (c *Cluster) kill() {
	c.cmd.Process.Kill()
	<-c.exited
}
