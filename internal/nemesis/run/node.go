package run

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/harness-edge/harness-edge/internal/pgtest"
)

// node is one bin/caddy process and, on PostgreSQL, its two proxies to the database (its
// pool's and its LISTEN session's).
type node struct {
	name      string
	caddy     string
	dir       string
	caddyfile string
	port      int
	admin     string // host:port of Caddy's admin API
	base      string // http://127.0.0.1:port
	dsn       string // through pool ("" on bbolt)
	listenDSN string // through listen
	dataDir   string // bbolt's directory
	pool      *pgtest.Proxy
	listen    *pgtest.Proxy
	extraEnv  []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// start runs the node (again after a kill: same port, same files) and waits until
// GET /readyz answers 200 (store reachable, lease held). The log goes to a file beside the Caddyfile.
func (n *node) start(ctx context.Context) error {
	logFile, err := os.OpenFile(n.dir+"/caddy.log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(n.caddy, "run", "--config", n.caddyfile, "--adapter", "caddyfile")
	cmd.Dir = n.dir
	cmd.Env = n.env()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start node %s: %w", n.name, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	n.mu.Lock()
	n.cmd, n.exited = cmd, exited
	n.mu.Unlock()
	deadline := time.Now().Add(waitTimeout)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, n.base+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("node %s exited before answering; its log ends:\n%s", n.name, n.logTail(20))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s did not answer within %s: %v", n.name, waitTimeout, err)
		}
	}
}

// logTail is the last lines of the node's log, for an error message.
func (n *node) logTail(lines int) string {
	raw, _ := os.ReadFile(n.dir + "/caddy.log")
	all := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// env is the node's environment: its own home, so that Caddy's storage and autosave stay in
// the run's directory.
func (n *node) env() []string {
	return append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + n.dir,
		"XDG_DATA_HOME=" + n.dir + "/data",
		"XDG_CONFIG_HOME=" + n.dir + "/config",
	}, n.extraEnv...)
}

func (n *node) running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.exited == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// kill ends the process with SIGKILL (SIGCONT too: a stopped process keeps its port until it
// runs) and waits until it is gone.
func (n *node) kill() {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Process.Signal(syscall.SIGCONT)
	<-exited
}

func (n *node) signal(sig syscall.Signal) error {
	n.mu.Lock()
	cmd := n.cmd
	n.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return fmt.Errorf("node %s not started", n.name)
	}
	return cmd.Process.Signal(sig)
}

func (n *node) signalCont() { _ = n.signal(syscall.SIGCONT) }

// caddyCommand runs `caddy <verb>` against the node's own Caddyfile and admin endpoint, as an
// operator on the node's machine would (reload, validate), bounded by timeout.
func (n *node) caddyCommand(ctx context.Context, timeout time.Duration, verb string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := []string{verb, "--config", n.caddyfile, "--adapter", "caddyfile"}
	if verb == "reload" {
		args = append(args, "--address", n.admin, "--force")
	}
	cmd := exec.CommandContext(ctx, n.caddy, args...)
	cmd.Dir, cmd.Env = n.dir, n.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("caddy %s on node %s: %v: %s", verb, n.name, err, lastLine(out))
	}
	return nil
}

// lastLine is the last non-empty line of out, for an error message.
func lastLine(out []byte) string {
	var last string
	s := bufio.NewScanner(bytes.NewReader(out))
	for s.Scan() {
		if t := s.Text(); t != "" {
			last = t
		}
	}
	return last
}
