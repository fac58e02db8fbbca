package seed

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Vacuum runs VACUUM ANALYZE on the PostgreSQL database dsn after a bulk seed: what
// autovacuum does in time to tables that grew by use. Without it, tables loaded in one go have
// no planner statistics and no visibility map, and the first executions measured on them pay
// for that instead of for the store's size (at 1M stored: 32 % more time per execution and 74 %
// for the listing's first page, flat with it; docs/performance-log.md).
func Vacuum(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	return nil
}
