package bolt_test

import (
	"fmt"
	"testing"

	"github.com/harness-edge/harness-edge/backend/store/bolt"
	"github.com/harness-edge/harness-edge/internal/seed"
)

// BenchmarkStartsAsTheStoreGrows is the store's cost of one short execution (two commits, 32
// clients) with 10k, 100k and 1M executions already stored (HARNESS_GROWTH_SIZES to change
// them; seeding 1M takes a few minutes and 3.5 GiB): flat is the goal (docs/performance-log.md,
// "Cost as the store grows").
func BenchmarkStartsAsTheStoreGrows(b *testing.B) {
	for _, n := range seed.GrowthSizes(10000, 100000, 1000000) {
		s, err := bolt.Open(b.TempDir(), bolt.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := seed.Write(s, n, 10, 500, nil); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("stored=%d", n), func(b *testing.B) { seed.BenchStarts(b, s) })
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
