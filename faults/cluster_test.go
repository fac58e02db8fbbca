package faults

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/internal/pgtest"
)

// The cluster under test: PostgreSQL, nodes a and b (each behind two proxies of its own to the
// database: its pool's and its LISTEN session's) and the load balancer, all real processes.

const (
	nodeCaddyfile = "../examples/cluster.Caddyfile"
	lbCaddyfile   = "../examples/cluster-lb.Caddyfile"
	nodeHeader    = "X-Harness-Node" // examples/cluster.Caddyfile names the node that answered
)

type cluster struct {
	t     *testing.T
	bin   string
	db    *pgtest.Cluster
	dsn   string // the database, directly (the test's own reads)
	lease time.Duration
	nodes []*node
	lb    *process
}

// node is one Caddy process of examples/cluster.Caddyfile and its two proxies to the database.
type node struct {
	name         string
	pool, listen *proxy
	*process
}

// process is a running Caddy: its base URL and every line it wrote to stderr, timestamped.
type process struct {
	base   string
	env    []string
	dir    string
	cmd    *exec.Cmd
	exited chan struct{}
	log    *lineLog
}

// startCluster starts PostgreSQL (durable when the scenario crashes it), nodes a and b and the
// balancer, and waits until each answers.
func startCluster(t *testing.T, sc scale, durable bool) *cluster {
	t.Helper()
	db := pgtest.StartCluster(t, pgtest.Options{Durable: durable})
	c := &cluster{t: t, bin: buildCaddy(t), db: db, dsn: db.NewDatabase(t), lease: sc.lease}
	database := c.dsn[strings.LastIndex(c.dsn, "/")+1:]
	upstream := fmt.Sprintf("127.0.0.1:%d", db.Port)
	for _, name := range []string{"a", "b"} {
		n := &node{name: name, pool: startProxy(t, upstream), listen: startProxy(t, upstream)}
		via := func(p *proxy) string { return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s", p.Port(), database) }
		n.process = c.newProcess(
			"HARNESS_DATABASE_URL="+via(n.pool),
			"HARNESS_LISTEN_DATABASE_URL="+via(n.listen),
			"HARNESS_NODE="+name,
			"HARNESS_LEASE="+sc.lease.String())
		n.start(t, c.bin, nodeCaddyfile)
		c.nodes = append(c.nodes, n)
	}
	c.lb = c.newProcess(
		"HARNESS_NODE_A="+strings.TrimPrefix(c.nodes[0].base, "http://"),
		"HARNESS_NODE_B="+strings.TrimPrefix(c.nodes[1].base, "http://"))
	c.lb.start(t, c.bin, lbCaddyfile)
	return c
}

func (c *cluster) node(name string) *node {
	for _, n := range c.nodes {
		if n.name == name {
			return n
		}
	}
	c.t.Fatalf("no node %q", name)
	return nil
}

// newProcess prepares a process on a free port, in a directory of its own that the
// unprivileged user owns.
func (c *cluster) newProcess(env ...string) *process {
	t := c.t
	t.Helper()
	parent := t.TempDir()
	dir := filepath.Join(parent, "instance")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if as := unprivileged(); as != nil {
		for _, p := range []string{filepath.Dir(parent), parent} {
			if err := os.Chmod(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chown(dir, int(as.Uid), int(as.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	port := freePort(t)
	return &process{base: "http://127.0.0.1:" + port, dir: dir, env: append(os.Environ(),
		append([]string{
			"HOME=" + dir,
			"XDG_DATA_HOME=" + filepath.Join(dir, "data"),
			"XDG_CONFIG_HOME=" + filepath.Join(dir, "config"),
			"HARNESS_DATA_DIR=" + filepath.Join(dir, "harness"),
			"HARNESS_PORT=" + port,
			"HARNESS_ADMIN=localhost:" + freePort(t),
		}, env...)...)}
}

// start runs the process (again, after a kill: same port, same environment) and waits until
// GET /v1/runtime answers 200.
func (p *process) start(t *testing.T, bin, caddyfile string) {
	t.Helper()
	abs, err := filepath.Abs(caddyfile)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--config", abs, "--adapter", "caddyfile")
	cmd.Env, cmd.Dir = p.env, p.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: unprivileged(), Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if p.log == nil {
		p.log = &lineLog{}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.cmd, p.exited = cmd, make(chan struct{})
	go func() {
		p.log.readFrom(stderr)
		cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.kill() })
	deadline := time.Now().Add(time.Minute) // keeps a broken build from hanging the run
	for {
		resp, err := http.Get(p.base + "/v1/runtime")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-p.exited:
			t.Fatalf("caddy exited before answering:\n%s", p.log.tail(40))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer GET /v1/runtime within a minute: %v\n%s", p.base, err, p.log.tail(40))
		}
	}
}

// signal sends sig to the process.
func (p *process) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
}

// kill ends the process with SIGKILL (SIGCONT first: a stopped process keeps its port) and
// waits until it is gone.
func (p *process) kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	<-p.exited
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// lineLog keeps every line a process wrote, with the time it arrived, across restarts.
type lineLog struct {
	mu    sync.Mutex
	lines []logLine
}

type logLine struct {
	at   time.Time
	text string
}

func (l *lineLog) readFrom(r io.Reader) {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 4<<20)
	for s.Scan() {
		l.mu.Lock()
		l.lines = append(l.lines, logLine{at: time.Now(), text: s.Text()})
		l.mu.Unlock()
	}
}

// since counts the lines written at or after from.
func (l *lineLog) since(from time.Time) (n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if !line.at.Before(from) {
			n++
		}
	}
	return n
}

// sample is up to max lines written at or after from, for a failure message.
func (l *lineLog) sample(from time.Time, max int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, line := range l.lines {
		if !line.at.Before(from) && max > 0 {
			b.WriteString(line.text + "\n")
			max--
		}
	}
	return b.String()
}

func (l *lineLog) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	from := max(0, len(l.lines)-n)
	var b strings.Builder
	for _, line := range l.lines[from:] {
		b.WriteString(line.text + "\n")
	}
	return b.String()
}

// waitCtx is a context for one bounded wait of the test.
func waitCtx(t *testing.T, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), d)
}
