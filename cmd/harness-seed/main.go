// Command harness-seed fills a store with N finished executions written straight through the
// store API (no HTTP, no runtime), so that the cost of the next execution can be measured with
// 10k, 100k or 1M already stored (docs/performance-log.md, "Cost as the store grows") in minutes
// instead of a million HTTP calls. Each seeded execution is what the mock provider leaves for
// `harness-load`'s e2e phase: a succeeded record with an idempotency key (the SDK always sends
// one), its 7 events in the runtime's encoding, in conversations of -per-conversation
// executions; creation times end at the moment of seeding, so new executions sort after them.
//
//	harness-seed -data-dir /tmp/h/data -executions 1000000
//	harness-seed -dsn postgres://… -executions 100000
//
// With -list-samples it then reads the first page of the listing (all executions, and one
// conversation's) that many times and prints its p50 and p99: a benchmark, run by hand or by
// scripts/bench-growth.sh, never a test.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"slices"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/bolt"
	"github.com/harness-edge/harness-edge/backend/store/postgres"
	"github.com/harness-edge/harness-edge/internal/seed"
	"github.com/harness-edge/harness-edge/sdk/api"
)

func main() {
	dataDir := flag.String("data-dir", "", "bbolt store directory (the Caddyfile's data_dir)")
	dsn := flag.String("dsn", "", "PostgreSQL connection string (instead of -data-dir)")
	n := flag.Int("executions", 10000, "executions to write")
	perConv := flag.Int("per-conversation", 10, "executions per conversation")
	batch := flag.Int("batch", 500, "executions per commit")
	vacuum := flag.Bool("vacuum", true, "PostgreSQL: VACUUM ANALYZE after seeding, as autovacuum would have over time (a table loaded in one go has no statistics yet)")
	samples := flag.Int("list-samples", 0, "after seeding, time this many first pages of the listing and print p50/p99")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("harness-seed: ")

	s, err := openStore(*dataDir, *dsn)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	t0 := time.Now()
	lastConv, err := seed.Write(s, *n, *perConv, *batch, func(done int) { log.Printf("%d executions", done) })
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("wrote %d executions in %.1fs", *n, time.Since(t0).Seconds())
	if *dsn != "" && *vacuum {
		t1 := time.Now()
		if err := seed.Vacuum(context.Background(), *dsn); err != nil {
			log.Fatal(err)
		}
		log.Printf("VACUUM ANALYZE in %.1fs (as autovacuum would have, over time)", time.Since(t1).Seconds())
	}
	if *samples > 0 && lastConv != "" {
		for _, q := range []struct {
			name string
			q    store.ListQuery
		}{
			{"all", store.ListQuery{Limit: 20}},
			{"conversation", store.ListQuery{Limit: 20, ConversationID: lastConv}},
			{"succeeded", store.ListQuery{Limit: 20, States: map[api.ExecutionState]bool{api.ExecutionStateSucceeded: true}}},
		} {
			p50, p99, err := timeList(s, q.q, *samples)
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("list-first-page %s stored=%d p50_us=%.1f p99_us=%.1f\n", q.name, *n, p50, p99)
		}
	}
}

func openStore(dataDir, dsn string) (store.Store, error) {
	switch {
	case dataDir != "" && dsn == "":
		return bolt.Open(dataDir, bolt.Options{})
	case dsn != "" && dataDir == "":
		return postgres.Open(context.Background(), postgres.Config{DSN: dsn, Node: "harness-seed"})
	}
	return nil, errors.New("give exactly one of -data-dir and -dsn")
}

// timeList reads q's page samples times and returns the p50 and p99 in microseconds.
func timeList(s store.Store, q store.ListQuery, samples int) (p50, p99 float64, err error) {
	d := make([]time.Duration, samples)
	for i := range d {
		t0 := time.Now()
		page, _, err := s.ListExecutions(q)
		if err != nil {
			return 0, 0, err
		}
		if len(page) == 0 {
			return 0, 0, fmt.Errorf("empty first page for %+v", q)
		}
		d[i] = time.Since(t0)
	}
	slices.Sort(d)
	us := func(p float64) float64 { return float64(d[int(p*float64(len(d)-1))].Nanoseconds()) / 1000 }
	return us(0.5), us(0.99), nil
}

func init() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: harness-seed (-data-dir DIR | -dsn DSN) [-executions N] [-list-samples K]")
		flag.PrintDefaults()
	}
}
