// Command harness-nemesis runs a randomized nemesis against real harness nodes and checks the
// history of everything its clients saw (docs/nemesis.md):
//
//	harness-nemesis [-seed N] [-duration D] [-history FILE] [-store postgres|bolt] [-nodes N]
//	harness-nemesis check FILE
//
// The first form starts a cluster (real bin/caddy nodes over a throw-away PostgreSQL 15, or one
// node over bbolt), drives the protocol with concurrent clients while faults follow the seed's
// schedule, waits a quiet period, reads the final state, and checks the history; it exits 1
// with the violations and the command that replays the schedule. The second checks a recorded
// history alone.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/harness-edge/harness-edge/internal/nemesis/run"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "check" {
		os.Exit(runCheck(os.Args[2:]))
	}
	os.Exit(runNemesis(os.Args[1:], os.Stdout, os.Stderr))
}

// runNemesis is the run subcommand; its exit code is 0 when the history checks out, 1 when the
// checker found violations, 2 when the run could not be done or the arguments are wrong.
func runNemesis(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("harness-nemesis", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Int64("seed", 0, "the schedule's seed (0: a random one, printed)")
	duration := fs.Duration("duration", 2*time.Minute, "how long clients and faults run (then the quiet period)")
	historyPath := fs.String("history", "", "the history file to write (default: nemesis-<seed>.jsonl in the temp directory)")
	store := fs.String("store", "postgres", "postgres (a cluster over a throw-away PostgreSQL 15) or bolt (one node)")
	nodes := fs.Int("nodes", 3, "nodes of the PostgreSQL cluster")
	clients := fs.Int("clients", 8, "concurrent clients")
	lease := fs.Duration("lease", 5*time.Second, "the nodes' lease")
	caddy := fs.String("caddy", "bin/caddy", "the bin/caddy binary the nodes run")
	storeTimeout := fs.Duration("store-timeout", 5*time.Second, "the nodes' store timeout (PostgreSQL)")
	gap := fs.Duration("gap", 0, "the mean time between faults (0: every kind once over the first 60% of the run, then that pace)")
	faults := fs.String("faults", "", "comma-separated fault kinds to draw from (default: every kind the store can run)")
	planOnly := fs.Bool("plan", false, "print the seed's fault schedule and exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "harness-nemesis: unexpected argument %q (did you mean `harness-nemesis check FILE`?)\n", fs.Arg(0))
		return 2
	}
	if *seed == 0 {
		*seed = rand.Int64N(1<<53) + 1
	}
	if *historyPath == "" {
		*historyPath = fmt.Sprintf("%s/nemesis-%d.jsonl", os.TempDir(), *seed)
	}
	cfg := run.Config{Seed: *seed, Duration: *duration, History: *historyPath, Store: *store, Nodes: *nodes,
		Clients: *clients, Lease: *lease, StoreTimeout: *storeTimeout, Gap: *gap, Caddy: *caddy, Log: stderr}
	if *faults != "" {
		cfg.Faults = strings.Split(*faults, ",")
	}
	cfg.Replay = replayCommand(cfg, *faults)
	fmt.Fprintf(stdout, "harness-nemesis: seed %d (replay: %s)\n", *seed, cfg.Replay)
	if *planOnly {
		for _, line := range run.Plan(cfg) {
			fmt.Fprintln(stdout, line)
		}
		return 0
	}
	// Absolute: each node runs in a directory of its own.
	if abs, err := filepath.Abs(cfg.Caddy); err == nil {
		cfg.Caddy = abs
	}
	if _, err := os.Stat(cfg.Caddy); err != nil {
		fmt.Fprintf(stderr, "harness-nemesis: %v (build it: go build -o bin/caddy ./cmd/caddy)\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	summary, err := run.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "harness-nemesis: seed %d: the run failed: %v\nreplay: %s\n", *seed, err, cfg.Replay)
		return 2
	}
	fmt.Fprintf(stdout, "harness-nemesis: seed %d: %d executions; history %s\n", *seed, summary.Executions, cfg.History)
	for _, line := range summary.Lines() {
		fmt.Fprintln(stdout, "  "+line)
	}
	if code := runCheck([]string{cfg.History}); code != 0 {
		fmt.Fprintf(stderr, "harness-nemesis: seed %d: the history has violations\nreplay: %s\n", *seed, cfg.Replay)
		return code
	}
	return 0
}

// replayCommand is the command line that runs cfg's schedule again.
func replayCommand(cfg run.Config, faults string) string {
	cmd := fmt.Sprintf("go run ./cmd/harness-nemesis -seed %d -duration %s -store %s -lease %s -clients %d",
		cfg.Seed, cfg.Duration, cfg.Store, cfg.Lease, cfg.Clients)
	if cfg.Store == "postgres" {
		cmd += fmt.Sprintf(" -nodes %d", cfg.Nodes)
	}
	if cfg.Gap > 0 {
		cmd += " -gap " + cfg.Gap.String()
	}
	if cfg.StoreTimeout != 5*time.Second {
		cmd += " -store-timeout " + cfg.StoreTimeout.String()
	}
	if faults != "" {
		cmd += " -faults " + faults
	}
	return cmd
}
