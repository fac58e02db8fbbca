package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// fault is one scenario: what it does to the cluster, for how long, and which nodes it takes
// down (whose executions may fail).
type fault struct {
	name    string
	durable bool // the database is crashed: only synchronous commits survive it
	// takeover: before the load, the node to be killed is given sc.takeover long executions.
	takeover bool
	mayFail  []string
	frozen   string // a node stopped by SIGSTOP: the requests it held are not its code's delay
	// databaseFrozen: the database is stopped by SIGSTOP. A start whose COMMIT was on its way
	// when it stopped may have been applied, so it is answered only once the database answers
	// (store.Request.ApplyBy): its wait is measured from the database's return (invariant 6).
	databaseFrozen bool
	inject         func(t *testing.T, c *cluster)
	// hold waits while the fault lasts.
	hold func(t *testing.T, c *cluster, sc scale, preloaded []ack)
	heal func(t *testing.T, c *cluster)
	// cut: a node cut off from the database (and from nothing else). Streams are opened on it
	// before the fault, and must end before the fault heals (invariant 8).
	cut string
}

func sleepFor(d func(scale) time.Duration) func(*testing.T, *cluster, scale, []ack) {
	return func(_ *testing.T, _ *cluster, sc scale, _ []ack) { time.Sleep(d(sc)) }
}

// untilTakenOver waits until the killed node's preloaded executions are all terminal in the
// database (another node took them over), or two leases and a minute have passed.
func untilTakenOver(t *testing.T, c *cluster, sc scale, preloaded []ack) {
	ctx, cancel := waitCtx(t, 2*sc.lease+time.Minute)
	defer cancel()
	if _, err := settle(ctx, c.dsn, preloaded, 2*sc.lease+time.Minute); err != nil {
		t.Logf("waiting for the takeover: %v", err)
	}
}

func restart(name string) func(*testing.T, *cluster) {
	return func(t *testing.T, c *cluster) { c.node(name).start(t, c.bin, nodeCaddyfile) }
}

func signal(name string, sig syscall.Signal) func(*testing.T, *cluster) {
	return func(t *testing.T, c *cluster) { c.node(name).signal(t, sig) }
}

func faults() []fault {
	twoLeases := func(sc scale) time.Duration { return 2*sc.lease + time.Second }
	stall := func(sc scale) time.Duration { return sc.stall }
	return []fault{{
		name:    "node a SIGKILL under load, restarted after two leases",
		mayFail: []string{"a"},
		inject:  func(t *testing.T, c *cluster) { c.node("a").kill() },
		hold:    sleepFor(twoLeases),
		heal:    restart("a"),
	}, {
		name:    "node b SIGSTOP longer than its lease, then SIGCONT",
		mayFail: []string{"b"},
		frozen:  "b",
		inject:  signal("b", syscall.SIGSTOP),
		hold:    sleepFor(stall),
		heal:    signal("b", syscall.SIGCONT),
	}, {
		name:           "PostgreSQL SIGSTOP (every process), then SIGCONT",
		mayFail:        []string{"a", "b"}, // out of reach for everyone longer than a lease
		databaseFrozen: true,
		inject:         func(t *testing.T, c *cluster) { must(t, c.db.Pause()) },
		// Longer than a request's bound even in the lean form: invariant 6 must be able to fail.
		hold: sleepFor(func(sc scale) time.Duration { return max(sc.stall, requestBound(false)+2*time.Second) }),
		heal: func(t *testing.T, c *cluster) { must(t, c.db.Resume()) },
	}, {
		name:    "PostgreSQL SIGKILL (every process) and restart",
		durable: true,
		mayFail: []string{"a", "b"},
		inject:  func(t *testing.T, c *cluster) { must(t, c.db.Crash()) },
		hold:    sleepFor(func(sc scale) time.Duration { return sc.stall / 2 }),
		heal:    func(t *testing.T, c *cluster) { must(t, c.db.Restart()) },
	}, {
		name:    "node b partitioned from the database (both its proxies drop)",
		mayFail: []string{"b"},
		inject:  func(t *testing.T, c *cluster) { c.node("b").pool.Drop(); c.node("b").listen.Drop() },
		hold:    sleepFor(stall),
		heal:    func(t *testing.T, c *cluster) { c.node("b").pool.Heal(); c.node("b").listen.Heal() },
	}, {
		// A silent network, not a reset (issue 34): the node's connections stay open and nothing
		// comes back, so every store call waits for its deadline; when the network heals, the
		// held connections close (what was held is never delivered) and new ones go through.
		name:    "node a's network to the database silent (its proxies hold bytes), then closed",
		mayFail: []string{"a"},
		cut:     "a",
		inject:  func(t *testing.T, c *cluster) { c.node("a").pool.Pause(); c.node("a").listen.Pause() },
		hold:    sleepFor(stall),
		heal: func(t *testing.T, c *cluster) {
			for _, p := range []*proxy{c.node("a").pool, c.node("a").listen} {
				p.Drop()
				p.Heal()
			}
		},
	}, {
		name:   "node b's NOTIFY partitioned (its LISTEN proxy drops)",
		inject: func(t *testing.T, c *cluster) { c.node("b").listen.Drop() },
		hold:   sleepFor(stall),
		heal:   func(t *testing.T, c *cluster) { c.node("b").listen.Heal() },
	}, {
		name:     "takeover of node a's running executions (SIGKILL)",
		takeover: true,
		mayFail:  []string{"a"},
		inject:   func(t *testing.T, c *cluster) { c.node("a").kill() },
		hold:     untilTakenOver,
		heal:     restart("a"),
	}}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestFaults runs every scenario on a cluster of its own and checks the invariants after each.
func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and three Caddy processes per fault; run without -short")
	}
	sc := currentScale()
	var all []figures
	for _, f := range faults() {
		t.Run(f.name, func(t *testing.T) {
			all = append(all, runFault(t, sc, f))
		})
	}
	printFigures(os.Stdout, sc, all)
}

// workloads: the load's executions last a couple of seconds (many are running at any moment);
// the takeover's preload outlasts its own start and the lease.
func loadWorkload(sc scale) workload {
	if sc.full {
		return workload{words: 10, delay: 500 * time.Millisecond}
	}
	return workload{words: 8, delay: 250 * time.Millisecond}
}

func preloadWorkload(sc scale) workload {
	if sc.full {
		return workload{words: 20, delay: 3 * time.Second}
	}
	return workload{words: 10, delay: time.Second}
}

func runFault(t *testing.T, sc scale, f fault) figures {
	c := startCluster(t, sc, f.durable)
	a, b := c.node("a"), c.node("b")
	lb := target{"lb", c.lb.base}
	targets := []target{lb, {"a", a.base}, {"b", b.base}}
	conversations := make([]string, sc.clients)
	for i := range conversations {
		conversations[i] = newConversation(t, lb.base)
	}

	rec := &recorder{}
	var preloaded []ack
	if f.takeover {
		pre := &recorder{}
		if err := burst(pre, target{"a", a.base}, conversations[0], preloadWorkload(sc), 16, sc.takeover); err != nil {
			t.Fatal(err)
		}
		_, preloaded = pre.snapshot()
		reqs, _ := pre.snapshot()
		for _, r := range reqs {
			rec.add(r, nil)
		}
		rec.mu.Lock()
		rec.acks = append(rec.acks, preloaded...)
		rec.mu.Unlock()
		t.Logf("%d long executions started on node a", len(preloaded))
	}
	rate := sc.rate
	if f.takeover {
		// The survivor takes over under a heavier load (issue 24 reproduced it with 16
		// clients starting as fast as they could).
		rate *= 3
	}
	load := startLoad(rec, targets, conversations, loadWorkload(sc), sc.clients, rate, sc.maxStarts)
	ready := watchReadiness(targets[1:])
	time.Sleep(2 * time.Second) // under load before the fault

	settleBound := 3*sc.lease + 40*time.Second
	if sc.full {
		settleBound += time.Minute
	}
	streamsCtx, stopStreams := context.WithTimeout(context.Background(), settleBound+10*time.Second)
	defer stopStreams()
	var heldStreams func() []followed
	if f.cut != "" {
		heldStreams = followHeld(t, streamsCtx, rec, targets, f.cut, 6)
	}

	// The fault, and streams opened while it is on: the latest acknowledged executions (the
	// likeliest to be running), each first read at one endpoint in turn.
	injected := time.Now()
	f.inject(t, c)
	inEffect := time.Now() // (stopping every process of the database takes a few milliseconds)
	streams := followDuring(streamsCtx, rec, targets, 12)
	f.hold(t, c, sc, preloaded)
	healed := time.Now()
	f.heal(t, c)
	t.Logf("fault held %s", healed.Sub(injected).Round(time.Millisecond))
	time.Sleep(3 * time.Second) // the load goes on after the heal
	load.halt()
	ready.halt()

	requests, acks := rec.snapshot()
	ctx, cancel := waitCtx(t, settleBound+time.Minute)
	defer cancel()
	db, err := settle(ctx, c.dsn, acks, settleBound)
	if err != nil {
		t.Fatalf("reading the database: %v", err)
	}
	followedStreams := streams()
	var held []followed
	cutBase := ""
	if heldStreams != nil {
		held = heldStreams()
		followedStreams = append(followedStreams, held...)
		cutBase = c.node(f.cut).base
		t.Logf("streams held on node %s: %s", f.cut, heldFigures(held, cutBase, injected, healed))
	}
	ids := make([]string, len(acks))
	for i, a := range acks {
		ids[i] = a.id
	}
	views := agreeing(ctx, targets, db, ids)
	logLines := map[string]int{}
	for _, n := range c.nodes {
		logLines[n.name] = n.log.since(injected)
	}

	var latencyChecked []request
	for _, r := range requests {
		switch {
		case heldByFrozen(r, f.frozen, injected, healed):
		case f.databaseFrozen && r.at.Before(inEffect):
			latencyChecked = append(latencyChecked, sinceDatabaseReturned(r, healed))
		default:
			latencyChecked = append(latencyChecked, r)
		}
	}
	violations := 0
	for _, inv := range []struct {
		name  string
		found []string
	}{
		{"1 every acknowledged start exists", checkAcknowledged(acks, db)},
		{"2 one terminal event, contiguous sequences", checkEventLogs(db)},
		{"3 only the downed node's executions fail", checkFailures(acks, db, f.mayFail)},
		{fmt.Sprintf("4 every node agrees with the database within %s", agreeWithin), checkAgreement(views, db)},
		{"5 every stream ends or resumes", checkStreams(followedStreams, db)},
		{fmt.Sprintf("6 no request waited longer than %s (%s through the balancer)", requestBound(false), requestBound(true)), checkLatency(latencyChecked, requestBound)},
		{fmt.Sprintf("7 at most %d log lines per node", logLinesPerFault), checkLogLines(logLines, logLinesPerFault)},
		{"8 streams held on a node cut off from the database end before the cut heals", checkHeldStreams(held, cutBase, healed)},
	} {
		violations += len(inv.found)
		if len(inv.found) > 0 && strings.HasPrefix(inv.name, "4 ") {
			t.Logf("invariant 4's violations per endpoint: %s", counts(perEndpoint(views, db)))
		}
		if len(inv.found) > 0 {
			t.Errorf("invariant %s: %d violations, e.g.:\n  %s", inv.name, len(inv.found), strings.Join(inv.found[:min(8, len(inv.found))], "\n  "))
		}
	}
	if logLines["a"] > logLinesPerFault || logLines["b"] > logLinesPerFault || violations > 0 {
		for _, n := range c.nodes {
			t.Logf("node %s's first log lines since the fault:\n%s", n.name, n.log.sample(injected, 30))
		}
	}
	fig := measure(f.name, requests, acks, db, injected, healed, logLines, violations)
	fig.notReady, fig.readyAgain = ready.figures(injected, healed)
	t.Logf("%d starts, %d acknowledged (not: direct %s, via the balancer %s), %d streams followed; failed: %s; max latency %s",
		fig.starts, fig.acked, counts(fig.refused), counts(fig.refusedViaLB), len(followedStreams), counts(fig.failed), fig.maxLatency.Round(time.Millisecond))
	return fig
}

// perEndpoint counts the views that differ from the database, per endpoint.
func perEndpoint(views []view, db map[string]*dbExecution) map[string]int {
	out := map[string]int{}
	for _, v := range views {
		if disagreement(v, db[v.id]) != "" {
			out[v.endpoint]++
		}
	}
	return out
}

// heldByFrozen reports whether r was held by the frozen node: sent to it, or answered by it,
// while it was stopped.
func heldByFrozen(r request, frozen string, from, to time.Time) bool {
	if frozen == "" {
		return false
	}
	overlaps := r.at.Before(to) && r.at.Add(r.latency).After(from)
	return overlaps && (r.target == frozen || r.node == frozen || (r.target == "lb" && r.status == 0))
}

// sinceDatabaseReturned is r, sent before the database was wholly frozen, with its wait counted from the
// database's return: its transaction may have sent COMMIT to the frozen server, and a start that
// may exist is answered only once the store learns whether it does. It still must not wait
// longer than a request's bound after that.
func sinceDatabaseReturned(r request, healed time.Time) request {
	answered := r.at.Add(r.latency)
	if answered.After(healed) {
		r.latency = answered.Sub(healed)
		r.err += " (in flight when the database froze: the wait counted from its return)"
	} else {
		r.latency = 0
	}
	return r
}

// followDuring follows the n latest acknowledged executions' streams, in the background; the
// function it returns waits for them and returns what they saw.
func followDuring(ctx context.Context, rec *recorder, targets []target, n int) func() []followed {
	_, acks := rec.snapshot()
	acks = acks[max(0, len(acks)-n):]
	out := make([]followed, len(acks))
	var wg sync.WaitGroup
	for i, a := range acks {
		bases := make([]string, len(targets))
		for j := range targets {
			bases[j] = targets[(i+j)%len(targets)].base
		}
		wg.Go(func() { out[i] = follow(ctx, a.id, bases, nil) })
	}
	return func() []followed {
		wg.Wait()
		return out
	}
}

// followHeld opens, at node cut, the streams of the n latest acknowledged executions of each
// node (the cut node's own, and others' that it follows through the database), and returns once
// each has its headers: they are open when the fault begins. A stream that ends goes on at the
// other nodes in turn. The function it returns waits for them and returns what they saw.
func followHeld(t *testing.T, ctx context.Context, rec *recorder, targets []target, cut string, n int) func() []followed {
	t.Helper()
	_, acks := rec.snapshot()
	perOwner := map[string]int{}
	var chosen []ack
	for i := len(acks) - 1; i >= 0; i-- {
		if a := acks[i]; perOwner[a.owner] < n {
			perOwner[a.owner]++
			chosen = append(chosen, a)
		}
	}
	var bases []string
	for i, tg := range targets {
		if tg.name == cut {
			for j := range targets {
				bases = append(bases, targets[(i+j)%len(targets)].base)
			}
		}
	}
	out := make([]followed, len(chosen))
	var opened, done sync.WaitGroup
	for i, a := range chosen {
		opened.Add(1)
		done.Go(func() { out[i] = follow(ctx, a.id, bases, opened.Done) })
	}
	opened.Wait()
	t.Logf("%d streams open at node %s before the fault (owners: %v)", len(chosen), cut, perOwner)
	return func() []followed {
		done.Wait()
		return out
	}
}

func newConversation(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Post(base+"/v1/conversations", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var conv api.Conversation
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /v1/conversations: status %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&conv); err != nil {
		t.Fatal(err)
	}
	return conv.ID
}
