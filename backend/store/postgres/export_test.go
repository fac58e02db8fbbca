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
