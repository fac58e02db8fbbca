package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/harness-edge/harness-edge/internal/pgtest"
	"github.com/harness-edge/harness-edge/internal/seed"
)

// BenchmarkStartsAsTheStoreGrows is the store's cost of one short execution (two commits, 32
// clients) with 10k and 100k executions already stored (HARNESS_GROWTH_SIZES to change them),
// on a server of its own with fsync on: flat is the goal (docs/performance-log.md, "Cost as the
// store grows").
func BenchmarkStartsAsTheStoreGrows(b *testing.B) {
	cluster := pgtest.StartCluster(b, pgtest.Options{Durable: true})
	for _, n := range seed.GrowthSizes(10000, 100000) {
		dsn := cluster.NewDatabase(b)
		s := open(b, dsn, "bench")
		if _, err := seed.Write(s, n, 10, 500, nil); err != nil {
			b.Fatal(err)
		}
		if err := seed.Vacuum(context.Background(), dsn); err != nil { // as autovacuum would have
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("stored=%d", n), func(b *testing.B) { seed.BenchStarts(b, s) })
		s.Close()
	}
}
