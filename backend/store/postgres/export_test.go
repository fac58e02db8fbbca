package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// MigrateTo applies the schema migrations up to version on dsn (tests of upgrades).
func MigrateTo(ctx context.Context, dsn string, version int64) error {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return err
	}
	return migrateTo(ctx, cfg, version)
}

// HoldFence begins a transaction on the store's pool, takes the fence of epoch in it as a commit
// does first (a share lock on the node's lease row), and sends nothing more: what the server
// sees of a node whose network went silent in the middle of a commit. release ends it.
func (s *Store) HoldFence(ctx context.Context, epoch int64) (release func(), err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `SELECT harness_fence($1, $2)`, s.node, epoch); err != nil {
		_ = tx.Rollback(ctx)
		return nil, err
	}
	return func() { _ = tx.Rollback(context.Background()) }, nil
}

// BeforeCommit makes the store call fn just before it sends each COMMIT (set it before the
// first commit): tests of a COMMIT whose outcome the store cannot learn.
func (s *Store) BeforeCommit(fn func()) { s.beforeCommit = fn }

// Setting is a setting of the store's sessions as the server has it (SHOW).
func (s *Store) Setting(ctx context.Context, name string) (string, error) {
	var v string
	err := s.pool.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v)
	return v, err
}

// LockWaiters counts the sessions of the store's database that wait on a lock right now.
func (s *Store) LockWaiters(ctx context.Context) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
	return n, err
}
