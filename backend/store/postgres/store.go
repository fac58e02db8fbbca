// Package postgres is the store that several nodes share: one PostgreSQL database. It
// implements store.Store and store.Cluster.
//
// Writes go through store.Committer's group commit: everything queued while a transaction is
// in flight becomes the next transaction, its rows written table by table with multi-row
// statements (unnest of arrays), all sent in one round trip (a pgx batch). A commit that wrote
// events sends one NOTIFY per execution inside the transaction, so other nodes learn of it once
// it is visible (Watch). Uniqueness is the database's: the primary key of events
// (execution_id, sequence) and of idempotency records (tenant, conversation_id, key) — the
// latter surfaces as store.ErrConflict.
//
// The schema lives in migrations/*.sql, embedded and applied by Open (goose, under a session
// advisory lock: nodes starting together apply it once). Backups are PostgreSQL's business:
// pg_dump, base backups, replication; Backup says so.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/harness-edge/harness-edge/backend/store"
)

// Config says which database to use and who this node is.
type Config struct {
	// DSN is a PostgreSQL connection string (URL or key=value), e.g.
	// postgres://harness@db.internal/harness. Required. It must reach PostgreSQL directly or
	// through a session-mode pooler: LISTEN needs a session of its own. pgxpool's settings go
	// in it too (pool_max_conns, default here DefaultPoolMaxConns).
	DSN string
	// ListenDSN, when set, is the connection string of the one LISTEN session (wake-ups from
	// other nodes' commits) instead of DSN: the pool may then go through a transaction-mode
	// pooler while LISTEN reaches PostgreSQL directly, and the fault-injection suite (faults/)
	// can cut a node's notifications alone. Same database as DSN. Default: DSN.
	ListenDSN string
	// Node is this node's name: the Owner of the executions it starts, the name of its lease and
	// the address of its commands. Unique per running node. Required.
	Node string
	// OutboxClaim is how long a webhook sender holds a notification it took (OutboxHeads)
	// before another node may take it: longer than one delivery attempt. Default 1 minute.
	OutboxClaim time.Duration
	// Observe, when set, is told how long each write transaction took (metrics).
	Observe func(time.Duration)
	// CommitLinger is store.CommitterOptions.Linger: how long a group commit waits for more
	// writes while writers are concurrent; 0: not at all.
	CommitLinger time.Duration
	// LogError, when set, is told of errors no caller sees (the listener's reconnects).
	LogError func(error)
	// Timeout bounds each read and each lease call (DefaultTimeout when zero): a database that
	// does not answer in time fails the call with store.ErrUnavailable. Commits are not bounded
	// by it: a commit that cannot reach the database is retried until it can (a stalled database
	// pauses executions, it does not fail them), except a start's, which its Request.Deadline
	// bounds.
	Timeout time.Duration
}

// DefaultTimeout is Config.Timeout's default.
const DefaultTimeout = 5 * time.Second

// DefaultOutboxClaim is Config.OutboxClaim's default.
const DefaultOutboxClaim = time.Minute

// DefaultPoolMaxConns is the pool's size when the DSN does not set pool_max_conns: every live
// stream reads the store when woken, and pgxpool's own default (4 on this machine) would queue
// them behind one another. The commit path and the listener use one connection each.
const DefaultPoolMaxConns = 16

// Store is a PostgreSQL database shared by one or more nodes.
type Store struct {
	pool *pgxpool.Pool
	// leases is the lease calls' own connection (AcquireLease, RenewLease): a renewal must never
	// wait for a connection of the pool behind the reads of a busy node, since a node whose
	// renewals are late for a whole lease can no longer vouch for it and ends its streams
	// (backend/cluster/vouch.go).
	leases    *pgxpool.Pool
	node      string
	claim     time.Duration
	timeout   time.Duration // Config.Timeout
	logError  func(error)
	committer *store.Committer
	watch     *watcher
	log       *streamLog // the stream log's identity and observer (streamlog.go)
	// beforeCommit, set by tests only (export_test.go), runs just before each COMMIT is sent.
	beforeCommit func()

	mu     sync.Mutex
	outbox store.OutboxPlanner

	closeOnce sync.Once
}

var (
	_ store.Store   = (*Store)(nil)
	_ store.Cluster = (*Store)(nil)
)

// Open connects, applies the schema's pending migrations, starts listening for other nodes'
// notifications and returns the store. ctx bounds the start only.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.DSN == "" {
		return nil, errors.New("postgres store: dsn is required")
	}
	if cfg.Node == "" {
		return nil, errors.New("postgres store: node name is required")
	}
	if cfg.OutboxClaim <= 0 {
		cfg.OutboxClaim = DefaultOutboxClaim
	}
	if cfg.LogError == nil {
		cfg.LogError = func(error) {}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	poolCfg, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("postgres store: parse dsn: %w", err)
	}
	if !strings.Contains(cfg.DSN, "pool_max_conns") {
		poolCfg.MaxConns = DefaultPoolMaxConns
	}
	if poolCfg.ConnConfig.ConnectTimeout == 0 { // connect_timeout in the DSN
		poolCfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	if err := migrate(ctx, poolCfg.ConnConfig); err != nil {
		return nil, fmt.Errorf("postgres store: migrate: %w", err)
	}
	// A transaction of this node whose network went silent (nothing more arrives, and neither
	// does the client's cancel or close) would keep its share lock on the node's lease row
	// (the fence, commit.go) until the server's TCP keepalive noticed, two hours by default:
	// no other node could claim the node meanwhile, however long ago its lease expired. None
	// of the store's transactions waits for its client longer than Timeout (each runs under
	// it), so the server may end one that does. After the migrations, which may rightly take
	// longer; a DSN that sets it keeps its own.
	if _, set := poolCfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"]; !set {
		poolCfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt(cfg.Timeout.Milliseconds(), 10)
	}
	// No JIT compilation: every statement of the store reads or writes a few rows by an index,
	// but the planner's estimates for the one-row stream_log_state (never analysed: the default
	// of a thousand rows) push the stream log's read past jit_above_cost once the events table
	// is large, and compiling it took 300 ms to 1.6 s, for a query that runs in under one. Each
	// node's pump read the log that slowly, so a tenant stream on the other node lagged a second
	// behind (docs/performance-log.md). A DSN that sets jit keeps its own.
	if _, set := poolCfg.ConnConfig.RuntimeParams["jit"]; !set {
		poolCfg.ConnConfig.RuntimeParams["jit"] = "off"
	}
	poolCfg.AfterConnect = func(_ context.Context, conn *pgx.Conn) error {
		registerArrays(conn.TypeMap()) // arrays.go
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	listenCfg := poolCfg.ConnConfig
	if cfg.ListenDSN != "" {
		if listenCfg, err = pgx.ParseConfig(cfg.ListenDSN); err != nil {
			pool.Close()
			return nil, fmt.Errorf("postgres store: parse listen dsn: %w", err)
		}
		if listenCfg.ConnectTimeout == 0 {
			listenCfg.ConnectTimeout = poolCfg.ConnConfig.ConnectTimeout
		}
	}
	leaseCfg := poolCfg.Copy()
	leaseCfg.MaxConns, leaseCfg.MinConns = 1, 0 // one renewal at a time, from one goroutine
	leases, err := pgxpool.NewWithConfig(ctx, leaseCfg)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	s := &Store{pool: pool, leases: leases, node: cfg.Node, claim: cfg.OutboxClaim, logError: cfg.LogError, timeout: cfg.Timeout}
	if s.log, err = openStreamLog(ctx, s); err != nil {
		leases.Close()
		pool.Close()
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	s.watch, err = startWatcher(ctx, listenCfg, cfg.Node, cfg.LogError)
	if err != nil {
		pool.Close()
		leases.Close()
		return nil, fmt.Errorf("postgres store: listen: %w", err)
	}
	s.committer = store.NewCommitter(s.applyGroup, store.CommitterOptions{
		Observe:   cfg.Observe,
		Linger:    cfg.CommitLinger,
		Transient: unreachable,
		LogRetry: func(err error, attempt, requests int) {
			cfg.LogError(fmt.Errorf("commit of %d requests failed (attempt %d; tried again with backoff): %w", requests, attempt, err))
		},
	})
	return s, nil
}

// Node is this node's name.
func (s *Store) Node() string { return s.node }

// Commit applies b durably and waits for it.
func (s *Store) Commit(b *store.Batch) error { return s.committer.Commit(b) }

// Submit queues req for the next group commit (see store.Committer).
func (s *Store) Submit(req *store.Request) error { return s.committer.Submit(req) }

// SetOutboxPlanner makes every later commit write outbox rows for the events p wants.
func (s *Store) SetOutboxPlanner(p store.OutboxPlanner) {
	s.mu.Lock()
	s.outbox = p
	s.mu.Unlock()
}

func (s *Store) planner() store.OutboxPlanner {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.outbox
}

// Backup is not done by the store: a PostgreSQL database is backed up with PostgreSQL's tools
// (pg_dump for a logical copy, pg_basebackup or a managed service's snapshots for a physical
// one), which copy it consistently while nodes write.
func (s *Store) Backup(io.Writer) (int64, error) {
	return 0, fmt.Errorf("the PostgreSQL store is backed up with PostgreSQL's own tools (pg_dump, pg_basebackup), not through the harness: %w", errors.ErrUnsupported)
}

// Close commits what was submitted before, stops listening, then closes the pool.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.committer.Close()
		s.watch.close()
		s.pool.Close()
		s.leases.Close()
	})
	return nil
}

// opCtx is the context of the store's own calls (the contract's reads take none): bounded by
// Config.Timeout, so a database that stops answering fails a call with store.ErrUnavailable
// instead of hanging the request that made it.
func (s *Store) opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.timeout)
}

// bound is ctx, bounded by Config.Timeout too.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// readError makes a failure to reach the database in time store.ErrUnavailable (the runtime
// answers 503 and the caller may try again); errors the database itself reports stay as
// they are, except the ones that say the connection or the server is going away.
func readError(err error) error {
	if err == nil || errors.Is(err, pgx.ErrNoRows) || errors.Is(err, store.ErrFenced) || errors.Is(err, store.ErrUnavailable) {
		return err
	}
	if !unreachable(err) {
		return err
	}
	return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
}

// unreachable reports whether err says the database could not be reached or did not answer
// in time, as opposed to an answer of the database's (a constraint, a fence, bad SQL).
func unreachable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P01–57P03: the server is shutting down or starting.
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	var netErr net.Error
	var connectErr *pgconn.ConnectError
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.As(err, &netErr) || errors.As(err, &connectErr) ||
		pgconn.Timeout(err) || strings.Contains(err.Error(), "conn closed")
}

// getOne scans the single row of sql into dest; found is false when there is none.
func (s *Store) getOne(sql string, args []any, dest ...any) (found bool, err error) {
	ctx, cancel := s.opCtx()
	defer cancel()
	err = s.pool.QueryRow(ctx, sql, args...).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, readError(err)
}
