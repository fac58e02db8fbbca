package postgres

import (
	"context"
	"embed"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS // and the migrations written in Go: migrate_checksums.go

// migrate applies the pending migrations. goose holds a session-level advisory lock while it
// does, so when several nodes start together one applies them and the others wait, then find
// nothing left to do. The lock is polled each second (goose's default is every 5 s) for up to
// 5 minutes.
func migrate(ctx context.Context, connCfg *pgx.ConnConfig) error {
	return migrateTo(ctx, connCfg, 0)
}

// migrateTo applies the migrations up to version (0: all of them). Tests use it to build a
// database as an older release left it.
func migrateTo(ctx context.Context, connCfg *pgx.ConnConfig, version int64) error {
	migrations, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 300))
	if err != nil {
		return err
	}
	db := stdlib.OpenDB(*connCfg)
	defer db.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations,
		goose.WithSessionLocker(locker),
		goose.WithTableName("harness_schema_version"),
		goose.WithDisableGlobalRegistry(true),
		goose.WithGoMigrations(eventChecksumsMigration))
	if err != nil {
		return err
	}
	if version > 0 {
		_, err = provider.UpTo(ctx, version)
	} else {
		_, err = provider.Up(ctx)
	}
	return err
}
