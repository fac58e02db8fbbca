package run

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/harness-edge/harness-edge/internal/pgtest"
)

// cluster is the system under test: real bin/caddy nodes over one throw-away PostgreSQL 15
// (each node's pool and LISTEN session through TCP proxies of its own, so a node can be cut
// off alone), or one node over a bbolt file.
type cluster struct {
	caddy    string // the bin/caddy binary
	dir      string // everything the run writes but the history
	settings Settings
	db       *pgtest.Cluster // nil: one bbolt node
	nodes    []*node
	logf     func(format string, args ...any)
	nodeEnv  []string
}

// startCluster starts the database (when store is "postgres") and n nodes, and waits until
// each answers.
func startCluster(ctx context.Context, cfg Config, s Settings) (*cluster, error) {
	dir, err := os.MkdirTemp("", "harness-nemesis-")
	if err != nil {
		return nil, err
	}
	c := &cluster{caddy: cfg.Caddy, dir: dir, settings: s, logf: cfg.logf, nodeEnv: cfg.NodeEnv}
	count := cfg.Nodes
	var database string
	if cfg.Store == "postgres" {
		// Durable: PostgreSQL is crashed on purpose, and an acknowledged commit must survive it.
		if c.db, err = pgtest.New(pgtest.Options{Durable: true}); err != nil {
			c.close()
			return nil, err
		}
		dsn, err := c.db.CreateDatabase("nemesis")
		if err != nil {
			c.close()
			return nil, err
		}
		database, _, _ = strings.Cut(dsn[strings.LastIndex(dsn, "/")+1:], "?")
	} else {
		count = 1
	}
	for i := range count {
		n, err := c.newNode(string(rune('a'+i)), database)
		if err != nil {
			c.close()
			return nil, err
		}
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes {
		if err := n.start(ctx); err != nil {
			c.close()
			return nil, err
		}
	}
	return c, nil
}

// newNode prepares node name: its ports, its proxies to the database, its Caddyfile.
func (c *cluster) newNode(name, database string) (*node, error) {
	n := &node{name: name, caddy: c.caddy, dir: filepath.Join(c.dir, name), extraEnv: c.nodeEnv}
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		return nil, err
	}
	var err error
	if n.port, err = freePort(); err != nil {
		return nil, err
	}
	adminPort, err := freePort()
	if err != nil {
		return nil, err
	}
	n.admin = fmt.Sprintf("127.0.0.1:%d", adminPort)
	n.base = fmt.Sprintf("http://127.0.0.1:%d", n.port)
	if c.db != nil {
		upstream := fmt.Sprintf("127.0.0.1:%d", c.db.Port)
		for _, p := range []**pgtest.Proxy{&n.pool, &n.listen} {
			if *p, err = pgtest.NewProxy(upstream); err != nil {
				return nil, err
			}
		}
		via := func(p *pgtest.Proxy) string {
			return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.Port(), database)
		}
		n.dsn, n.listenDSN = via(n.pool), via(n.listen)
	} else {
		n.dataDir = filepath.Join(n.dir, "harness")
	}
	n.caddyfile = filepath.Join(n.dir, "Caddyfile")
	return n, os.WriteFile(n.caddyfile, []byte(nodeCaddyfile(n, c.settings)), 0o644)
}

// names lists the nodes' names, in order.
func (c *cluster) names() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.name
	}
	return out
}

func (c *cluster) node(name string) *node {
	for _, n := range c.nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}

// heal ends every fault still on: proxies forward, stopped nodes continue, killed nodes and a
// crashed database start again. What it could not undo is returned.
func (c *cluster) heal(ctx context.Context) error {
	var errs []error
	if c.db != nil {
		// A stalled server continues; a crashed one starts again (Restart refuses a running one).
		_ = c.db.Resume()
		if err := c.db.Restart(); err != nil && !strings.Contains(err.Error(), "still running") {
			errs = append(errs, fmt.Errorf("restart postgres: %w", err))
		}
	}
	for _, n := range c.nodes {
		if n.pool != nil {
			n.pool.Heal()
			n.listen.Heal()
		}
		n.signalCont()
		if !n.running() {
			if err := n.start(ctx); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// keepLogs copies each node's log (every start of it) to dir/<node>.log, for whoever reads a
// violation: the run's own directory goes with close.
func (c *cluster) keepLogs(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, n := range c.nodes {
		raw, err := os.ReadFile(filepath.Join(n.dir, "caddy.log"))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, n.name+".log"), raw, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// close stops every node and the database and removes the run's directory.
func (c *cluster) close() {
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		wg.Add(1)
		go func() { defer wg.Done(); n.kill() }()
		if n.pool != nil {
			defer n.pool.Close()
			defer n.listen.Close()
		}
	}
	wg.Wait()
	if c.db != nil {
		_ = c.db.Resume()
		if err := c.db.Stop(); err != nil {
			c.logf("stop postgres: %v", err)
		}
	}
	_ = os.RemoveAll(c.dir)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitTimeout is how long a node may take to answer after it starts.
const waitTimeout = time.Minute
