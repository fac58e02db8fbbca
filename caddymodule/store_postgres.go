package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/jackc/pgx/v5"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/postgres"
)

func init() {
	caddy.RegisterModule(new(PostgresStore))
}

// DefaultLease is PostgresStore.Lease's default: how long a node that stopped renewing is
// still taken for alive before another node fails its unfinished executions.
const DefaultLease = 10 * time.Second

// PostgresStore is the store several nodes share, harness.stores.postgres: one PostgreSQL
// database (package backend/store/postgres). Every node of a cluster names the same database
// and a node name of its own.
//
//	"store": {"backend": "postgres", "dsn": "{env.HARNESS_DATABASE_URL}", "node": "{env.HARNESS_NODE}", "lease": "10s"}
//
// Caddyfile: `store postgres <dsn>` or
//
//	store postgres {
//		dsn        {$HARNESS_DATABASE_URL}
//		listen_dsn {env.HARNESS_LISTEN_DATABASE_URL} # optional; default: dsn
//		node       {$HARNESS_NODE}
//		lease      10s
//		timeout    5s
//		commit_linger 2ms
//	}
type PostgresStore struct {
	// DSN is the PostgreSQL connection string (URL or key=value). Placeholders are replaced
	// ({env.*}). Required. It must reach PostgreSQL directly or through a session-mode pooler
	// (LISTEN needs a session).
	DSN string `json:"dsn,omitempty"`
	// ListenDSN, optional, is where the node's one LISTEN session connects instead of DSN (same
	// database): e.g. DSN through a transaction-mode pooler and ListenDSN straight to
	// PostgreSQL. Placeholders are replaced; empty after replacement means DSN.
	ListenDSN string `json:"listen_dsn,omitempty"`
	// Node is this node's name, unique among the running nodes of the cluster: the owner of the
	// executions it starts and the address of the commands other nodes send it. Placeholders are
	// replaced. Default: the host name.
	Node string `json:"node,omitempty"`
	// Lease is how long this node's lease lasts without renewal; when it lapses another node
	// fails this node's unfinished executions. Default 10s.
	// CommitLinger is how long a group commit waits for the writes of other executions to join
	// it while writers are concurrent (store_linger.go). Default 2ms; 0 turns it off.
	CommitLinger *caddy.Duration `json:"commit_linger,omitempty"`
	Lease        caddy.Duration  `json:"lease,omitempty"`
	// Timeout bounds every request's wait for the database: a read, or a start's commit, that
	// the database does not answer within it (a stall, a partition) answers 503 UNAVAILABLE
	// with Retry-After. Writes of running executions wait for the database instead of failing.
	// Default 5s.
	Timeout caddy.Duration `json:"timeout,omitempty"`

	dsn, listenDSN, node, key string // resolved by Provision
}

// CaddyModule returns the Caddy module information.
func (*PostgresStore) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "harness.stores.postgres",
		New: func() caddy.Module { return new(PostgresStore) },
	}
}

// Provision replaces placeholders, applies defaults and derives the store's identity.
func (p *PostgresStore) Provision(caddy.Context) error {
	if _, err := commitLinger(p.CommitLinger, "postgres"); err != nil {
		return err
	}
	repl := caddy.NewReplacer()
	p.dsn = repl.ReplaceKnown(p.DSN, "")
	if p.dsn == "" {
		return errors.New("store postgres: dsn is required (e.g. postgres://harness@db.internal/harness)")
	}
	p.listenDSN = repl.ReplaceKnown(p.ListenDSN, "")
	if p.listenDSN != "" {
		if _, err := pgx.ParseConfig(p.listenDSN); err != nil {
			return fmt.Errorf("store postgres: listen_dsn: %w", err)
		}
	}
	p.node = repl.ReplaceKnown(p.Node, "")
	if p.node == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			return errors.New("store postgres: node is required (the host name is unknown)")
		}
		p.node = host
	}
	if p.Lease < 0 {
		return fmt.Errorf("store postgres: lease %s is negative", time.Duration(p.Lease))
	}
	if p.Lease == 0 {
		p.Lease = caddy.Duration(DefaultLease)
	}
	if p.Timeout < 0 {
		return fmt.Errorf("store postgres: timeout %s is negative", time.Duration(p.Timeout))
	}
	if p.Timeout == 0 {
		p.Timeout = caddy.Duration(postgres.DefaultTimeout)
	}
	key, err := postgresStoreKey(p.dsn, p.node)
	if err != nil {
		return err
	}
	p.key = key
	return nil
}

// postgresStoreKey is "postgres://user@host:port/database#node": the database and the node,
// never the password (the key appears in logs and admin answers). Two handlers of one node
// naming one database share a runtime; two nodes of one process (tests) do not.
func postgresStoreKey(dsn, node string) (string, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "", fmt.Errorf("store postgres: dsn: %w", err)
	}
	u := url.URL{Scheme: "postgres", User: url.User(cfg.User), Host: fmt.Sprintf("%s:%d", cfg.Host, cfg.Port), Path: "/" + cfg.Database, Fragment: node}
	return u.String(), nil
}

// StoreKey identifies the database and this node (see postgresStoreKey).
func (p *PostgresStore) StoreKey() string { return p.key }

// LeaseDuration is the node's lease length (Lease, default DefaultLease), for the runtime's
// RenewLease/ClaimExpired loop.
func (p *PostgresStore) LeaseDuration() time.Duration { return time.Duration(p.Lease) }

// StoreTimeout bounds a request's wait for the database (Timeout, default 5s), for the
// runtime's starts.
func (p *PostgresStore) StoreTimeout() time.Duration { return time.Duration(p.Timeout) }

// OpenStore connects, applies pending schema migrations and starts listening to the other
// nodes.
func (p *PostgresStore) OpenStore(opts StoreOptions) (store.Store, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	linger, err := commitLinger(p.CommitLinger, "postgres")
	if err != nil {
		return nil, err
	}
	cfg := postgres.Config{DSN: p.dsn, ListenDSN: p.listenDSN, Node: p.node, Observe: opts.ObserveCommit,
		Timeout: time.Duration(p.Timeout), CommitLinger: linger}
	if opts.Logger != nil {
		cfg.LogError = func(err error) { opts.Logger.Warn("postgres store", "err", err) }
	}
	s, err := postgres.Open(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("opening the harness store %s: %w", p.key, err)
	}
	return s, nil
}

// UnmarshalCaddyfile parses `postgres [<dsn>] [{ dsn <dsn>; listen_dsn <dsn>; node <name>; lease <duration>; timeout <duration>; commit_linger <duration> }]`.
func (p *PostgresStore) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the module name
	if d.NextArg() {
		p.DSN = d.Val()
	}
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		setting := d.Val()
		var value string
		if !d.AllArgs(&value) {
			return d.ArgErr()
		}
		switch setting {
		case "dsn":
			if p.DSN != "" {
				return d.Err("store postgres: dsn given twice")
			}
			p.DSN = value
		case "listen_dsn":
			p.ListenDSN = value
		case "node":
			p.Node = value
		case "lease":
			lease, err := caddy.ParseDuration(value)
			if err != nil {
				return d.Errf("store postgres: lease %q: %v", value, err)
			}
			p.Lease = caddy.Duration(lease)
		case "commit_linger":
			linger, err := parseCommitLinger(value, "postgres")
			if err != nil {
				return d.Err(err.Error())
			}
			p.CommitLinger = linger
		case "timeout":
			timeout, err := caddy.ParseDuration(value)
			if err != nil {
				return d.Errf("store postgres: timeout %q: %v", value, err)
			}
			p.Timeout = caddy.Duration(timeout)
		default:
			return d.Errf("unrecognized store postgres setting %q", setting)
		}
	}
	return nil
}

var (
	_ StoreModule           = (*PostgresStore)(nil)
	_ caddy.Provisioner     = (*PostgresStore)(nil)
	_ caddyfile.Unmarshaler = (*PostgresStore)(nil)
)
