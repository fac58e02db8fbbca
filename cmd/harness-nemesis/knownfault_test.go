package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/internal/nemesis/check"
	"github.com/harness-edge/harness-edge/internal/nemesis/history"
	"github.com/harness-edge/harness-edge/internal/nemesis/run"
	"github.com/harness-edge/harness-edge/internal/pgtest"
	"github.com/harness-edge/harness-edge/internal/testutil"
)

// caddyKnownFault is bin/caddy with issue 44's claim fix undone and the fenced commit widened
// (backend/store/postgres/knownfault.go).
var caddyKnownFault = testutil.GoBinary{Package: "../caddy", Flags: []string{"-tags", "nemesis_knownfault"}}

// knownFaultSeeds are the seeds the demonstration states: each must find the stranded
// execution (docs/nemesis.md, "The known fault").
var knownFaultSeeds = []int64{1, 2, 3}

// The nemesis finds a known fault: with the claim of issue 44 back to one statement (and the
// orphan sweep that would heal what it strands off), and each commit held 2 s after its fence,
// a node stopped or cut off silently in the middle of a start's commit for longer than its
// lease (2 s here) but shorter than its commit's deadline (the store timeout, 15 s here) has
// that execution claimed by nobody: the claim began waiting before the commit ended, and its
// one statement's snapshot does not see it. The checker must name it not-terminal after the
// quiet period, on every stated seed. It takes ~2 min a seed, so it runs with
// HARNESS_NEMESIS=full (make nemesis-known-fault), not in make test. Measured: docs/nemesis.md,
// "The known fault".
func TestFindsTheKnownFault(t *testing.T) {
	if os.Getenv("HARNESS_NEMESIS") != "full" {
		t.Skip("the known-fault demonstration runs ~7 min: set HARNESS_NEMESIS=full (make nemesis-known-fault)")
	}
	pgtest.RequireBinaries(t)
	caddy := caddyKnownFault.Path(t)
	found := 0
	for _, seed := range knownFaultSeeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "history.jsonl")
			cfg := run.Config{Seed: seed, Duration: 90 * time.Second, History: path, Store: "postgres", Nodes: 3,
				Clients: 8, Lease: 2 * time.Second, StoreTimeout: 15 * time.Second, Gap: 3 * time.Second, Caddy: caddy,
				Faults:  []string{"stop", "cut-silent"},
				NodeEnv: []string{"HARNESS_KNOWNFAULT_COMMIT_DELAY=2s"}}
			if _, err := run.Run(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
			lines, err := history.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			rep := check.Check(lines, check.Options{FalseTakeoversCounted: true})
			var stranded []string
			for _, v := range rep.Violations {
				if v.Name == check.NotTerminal {
					stranded = append(stranded, v.String())
				}
			}
			if len(stranded) == 0 {
				t.Fatalf("seed %d: no stranded execution found (violations: %v)", seed, rep.Names())
			}
			found++
			t.Logf("seed %d: %d not-terminal reads, e.g. %s; all violations: %v", seed, len(stranded), stranded[0], rep.Names())
		})
	}
	t.Logf("%d of %d seeds found the stranded execution", found, len(knownFaultSeeds))
}
