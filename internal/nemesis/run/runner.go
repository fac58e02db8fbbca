// Package run is harness-nemesis's run: from a seed, a cluster of real bin/caddy nodes (over a
// throw-away PostgreSQL 15, or one node over bbolt), concurrent clients driving the whole
// protocol, faults on the seed's schedule, a history of everything the clients saw, the quiet
// period and the final read (docs/nemesis.md).
package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/harness-edge/harness-edge/internal/nemesis/history"
)

// Config is one run.
type Config struct {
	Seed     int64
	Duration time.Duration
	History  string // the history file to write; the nodes' logs go to History+".logs/"
	Store    string // "postgres" | "bolt"
	Nodes    int    // on PostgreSQL
	Clients  int
	Lease    time.Duration
	// Gap is the mean time between faults (0: the first round of kinds spread over 60 % of the
	// run, then the same pace).
	Gap time.Duration
	// StoreTimeout is the nodes' store timeout (0: 5 s, the harness's default).
	StoreTimeout time.Duration
	Caddy        string // the bin/caddy binary
	// Faults limits the kinds drawn (nil: every kind the store can run).
	Faults []string
	// NodeEnv is added to every node's environment (the known fault's commit delay).
	NodeEnv []string
	// Replay is the command that replays this run's schedule (recorded in the run line).
	Replay string
	// Log receives progress lines (nil: none).
	Log io.Writer
}

func (c Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, "nemesis: "+format+"\n", args...)
	}
}

func (c Config) tenants() []string { return []string{tenantAlpha, tenantBeta} }

// Plan is the schedule the seed gives for cfg, as text (what a replay will do).
func Plan(cfg Config) []string {
	var out []string
	for _, s := range plan(cfg.Seed, cfg.Duration, cfg.Lease, cfg.Gap, nodeNames(cfg), cfg.kinds()) {
		out = append(out, s.String())
	}
	return out
}

func nodeNames(cfg Config) []string {
	if cfg.Store == "bolt" {
		return []string{"a"}
	}
	out := make([]string, cfg.Nodes)
	for i := range out {
		out[i] = string(rune('a' + i))
	}
	return out
}

func (c Config) kinds() []string {
	all := FaultKinds(c.Store)
	if c.Faults == nil {
		return all
	}
	return slices.DeleteFunc(slices.Clone(c.Faults), func(k string) bool { return !slices.Contains(all, k) })
}

// Summary is what a run did, by kind.
type Summary struct {
	Counts     map[string]int
	Executions int
}

// runner holds one run's parts.
type runner struct {
	cfg      Config
	settings Settings
	cluster  *cluster
	j        *journal
	caller   *caller
	streams  *http.Client
	world    *world
	began    time.Time
	counts   *counter
	bg       sync.WaitGroup
}

// Run does the whole run and writes the history; the checker is the caller's next step. An
// error means the run itself could not be done (no PostgreSQL, a node that never started).
func Run(ctx context.Context, cfg Config) (Summary, error) {
	if cfg.Store == "" {
		cfg.Store = "postgres"
	}
	if cfg.Store != "postgres" && cfg.Store != "bolt" {
		return Summary{}, fmt.Errorf("store %q: want postgres or bolt", cfg.Store)
	}
	for _, k := range cfg.Faults {
		if !slices.Contains(FaultKinds(cfg.Store), k) {
			return Summary{}, fmt.Errorf("fault kind %q: the %s store runs %s", k, cfg.Store, strings.Join(FaultKinds(cfg.Store), ", "))
		}
	}
	if len(cfg.kinds()) == 0 {
		return Summary{}, errors.New("no fault kind to draw from")
	}
	s := defaultSettings(cfg.Lease, cfg.Store)
	if cfg.StoreTimeout > 0 {
		s.StoreTimeout = cfg.StoreTimeout
		s.Quiet = quietPeriod(s, cfg.Store)
	}
	j, err := openJournal(cfg.History)
	if err != nil {
		return Summary{}, err
	}
	r := &runner{cfg: cfg, settings: s, j: j, world: newWorld(), counts: &counter{m: map[string]int{}},
		streams: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	r.caller = newCaller(j, r.counts)
	steps := plan(cfg.Seed, cfg.Duration, cfg.Lease, cfg.Gap, nodeNames(cfg), cfg.kinds())
	cfg.logf("seed %d: %d faults over %s on %s", cfg.Seed, len(steps), cfg.Duration, cfg.Store)
	r.cluster, err = startCluster(ctx, cfg, s)
	if err != nil {
		j.close()
		return Summary{}, err
	}
	defer r.cluster.close()
	if err := j.Run(history.Run{Seed: cfg.Seed, Store: cfg.Store, Nodes: r.cluster.names(),
		Lease: history.Duration(cfg.Lease), Settings: s.history(), Command: cfg.Replay}); err != nil {
		return Summary{}, err
	}

	r.began = time.Now()
	load, stopLoad := context.WithTimeout(ctx, cfg.Duration)
	defer stopLoad()
	r.startClients(load)
	r.inject(load, steps)
	<-load.Done()
	r.bg.Wait() // every client and stream has returned
	if ctx.Err() != nil {
		j.close()
		return Summary{}, ctx.Err()
	}
	cfg.logf("load over; healing every fault, then a quiet period of %s", s.Quiet)
	if err := r.cluster.heal(ctx); err != nil {
		r.faultLine("heal", "cluster", "end", err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(s.Quiet):
	}
	r.finalRead(ctx)
	if err := r.cluster.keepLogs(cfg.History + ".logs"); err != nil {
		cfg.logf("keep the nodes' logs: %v", err)
	}
	if err := j.close(); err != nil {
		return Summary{}, fmt.Errorf("write the history: %w", err)
	}
	return Summary{Counts: r.counts.snapshot(), Executions: len(r.world.allExecutions())}, nil
}

// startClients starts the clients and the standing streams: per tenant an unfiltered and a
// lifecycle-filtered tenant stream (the latter finds the actions to answer), each resumed on
// random nodes for the whole run.
func (r *runner) startClients(ctx context.Context) {
	tenants := r.cfg.tenants()
	for i := range r.cfg.Clients {
		c := &client{name: fmt.Sprintf("c%d", i), tenant: tenants[i%len(tenants)],
			rng: rand.New(rand.NewPCG(uint64(r.cfg.Seed), streamClient+uint64(i)))}
		// Clients alternate tenants, so pairs of clients take the policies in turn: with eight,
		// every policy on every tenant from the start (later ones are drawn).
		if policy := i / len(tenants); policy < len(busyPolicies) {
			r.createConversation(ctx, c, busyPolicies[policy])
		}
		r.background(func() { r.clientLoop(ctx, c) })
	}
	for i, tenant := range tenants {
		for _, filtered := range []bool{false, true} {
			path := "/v1/events"
			if filtered {
				path += "?lifecycle=true"
			}
			rng := rand.New(rand.NewPCG(uint64(r.cfg.Seed), streamClient+1000+uint64(2*i)+boolBit(filtered)))
			r.background(func() {
				r.follow(ctx, rng, follow{stream: "tenant", scope: tenant, tenant: tenant, path: path,
					filtered: filtered, client: "watch-" + tenant})
			})
		}
	}
}

func boolBit(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func (r *runner) background(fn func()) {
	r.bg.Add(1)
	go func() { defer r.bg.Done(); fn() }()
}

// finalRead reads, on every node, every execution the clients learned of, every conversation
// they created (op "getConversation": whether a delete without an answer erased it), and each
// tenant's usage totals (as plain requests of op "usage").
func (r *runner) finalRead(ctx context.Context) {
	for _, n := range r.cluster.nodes {
		for _, e := range r.world.allExecutions() {
			status, answer := r.caller.do(ctx, n, call{client: "final", op: "get", method: "GET",
				path: "/v1/executions/" + e.id, tenant: e.tenant})
			line := history.Final{Node: n.name, ExecutionID: e.id, Status: status, Tenant: e.tenant}
			if status == 200 {
				line.Snapshot = answer
				var st struct {
					State string `json:"state"`
				}
				_ = json.Unmarshal(answer, &st)
				line.State = st.State
				r.counts.add("final "+st.State, 1)
			}
			_ = r.j.Final(line)
		}
		for _, c := range r.world.allConversations() {
			r.caller.do(ctx, n, call{client: "final", op: "getConversation", method: "GET",
				path: "/v1/conversations/" + url.PathEscape(c.id), tenant: c.tenant, conversationID: c.id})
		}
		for _, tenant := range r.cfg.tenants() {
			r.caller.do(ctx, n, call{client: "final", op: "usage", method: "GET", path: "/v1/usage", tenant: tenant})
		}
	}
}

// counter counts what happened, by kind, for the summary.
type counter struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *counter) add(k string, n int) { c.mu.Lock(); c.m[k] += n; c.mu.Unlock() }

func (c *counter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.m))
	for k, v := range c.m {
		out[k] = v
	}
	return out
}

// Lines renders the counts sorted by name.
func (s Summary) Lines() []string {
	var out []string
	for k, v := range s.Counts {
		out = append(out, fmt.Sprintf("%-28s %d", k, v))
	}
	sort.Strings(out)
	return out
}

// executionID reads the id of an Execution answer.
func executionID(answer []byte) string {
	var e struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(answer, &e)
	return e.ID
}
