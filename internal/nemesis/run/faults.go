package run

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"time"

	"github.com/harness-edge/harness-edge/internal/nemesis/history"
)

// inject runs the schedule: each step at its time, in a goroutine of its own (faults overlap),
// its start and end written to the history. It returns when every step has ended.
func (r *runner) inject(ctx context.Context, steps []step) {
	var wg sync.WaitGroup
	for i, s := range steps {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-time.After(time.Until(r.began.Add(s.At))):
		}
		wg.Add(1)
		rng := rand.New(rand.NewPCG(uint64(r.cfg.Seed), streamFault+uint64(i)))
		go func() { defer wg.Done(); r.fault(ctx, rng, s) }()
	}
	wg.Wait()
}

func (r *runner) faultLine(kind, target, phase string, err error) {
	line := history.Fault{Fault: kind, Target: target, Phase: phase}
	if err != nil {
		line.Detail = "error: " + err.Error()
		r.cfg.logf("fault %s on %s (%s): %v", kind, target, phase, err)
	}
	_ = r.j.Fault(line)
	r.counts.add("fault "+kind+" "+phase, 1)
}

// fault does one step and undoes it after its hold (the hold is cut short when the run ends:
// the quiet period needs every fault healed).
func (r *runner) fault(ctx context.Context, rng *rand.Rand, s step) {
	wait := func() {
		select {
		case <-ctx.Done():
		case <-time.After(s.Hold):
		}
	}
	n := r.cluster.node(s.Target)
	db := r.cluster.db
	switch s.Kind {
	case faultKill:
		r.faultLine(s.Kind, s.Target, "start", n.signal(syscall.SIGKILL))
		n.kill() // waits until it is gone
		wait()
		r.faultLine(s.Kind, s.Target, "end", r.restart(ctx, n))
	case faultStop:
		r.faultLine(s.Kind, s.Target, "start", n.signal(syscall.SIGSTOP))
		wait()
		r.faultLine("cont", s.Target, "end", n.signal(syscall.SIGCONT))
	case faultCutSilent, faultCutReset:
		if s.Kind == faultCutSilent { // bytes stop, connections stay: queries hang
			n.pool.Pause()
			n.listen.Pause()
		} else { // connections end and new ones are refused
			n.pool.Drop()
			n.listen.Drop()
		}
		r.faultLine(s.Kind, s.Target, "start", nil)
		wait()
		n.pool.Heal()
		n.listen.Heal()
		r.faultLine("heal", s.Target, "end", nil)
	case faultPGCrash:
		r.faultLine(s.Kind, s.Target, "start", db.Crash())
		wait()
		r.faultLine(s.Kind, s.Target, "end", db.Restart())
	case faultPGStall:
		r.faultLine(s.Kind, s.Target, "start", db.Pause())
		wait()
		r.faultLine(s.Kind, s.Target, "end", db.Resume())
	case faultReload, faultValidate:
		r.faultLine(s.Kind, s.Target, "start", nil)
		r.faultLine(s.Kind, s.Target, "end", n.caddyCommand(context.WithoutCancel(ctx), time.Minute, s.Kind))
	case faultOverload:
		r.faultLine(s.Kind, s.Target, "start", nil)
		r.overload(ctx, rng, n, s)
		r.faultLine(s.Kind, s.Target, "end", nil)
	case faultSlowReader:
		r.faultLine(s.Kind, s.Target, "start", nil)
		readCtx, cancel := context.WithTimeout(ctx, s.Hold)
		tenant := r.cfg.tenants()[rng.IntN(2)]
		r.follow(readCtx, rng, follow{stream: "tenant", scope: tenant, tenant: tenant, path: "/v1/events",
			client: "slow-reader", slow: between(rng, 50*time.Millisecond, 300*time.Millisecond)})
		cancel()
		r.faultLine(s.Kind, s.Target, "end", nil)
	default:
		panic(fmt.Sprintf("fault kind %q has no injector", s.Kind))
	}
}

// overload sends s.Size long starts to one node at once, spread over the hold: the node's
// commits and its lease renewals compete for the same CPU and the same database, so its lease
// is pushed to its edge (a takeover of a node that was neither killed, stopped nor cut is a
// false takeover, which the checker counts).
func (r *runner) overload(ctx context.Context, rng *rand.Rand, n *node, s step) {
	var wg sync.WaitGroup
	burst := &client{name: fmt.Sprintf("overload-%s-%d", n.name, rng.IntN(1<<20)), rng: rng,
		tenant: r.cfg.tenants()[rng.IntN(2)]}
	conv := r.createConversation(ctx, burst, "")
	bodies := make([]map[string]any, s.Size)
	tenants := make([]string, s.Size)
	for i := range bodies {
		tenants[i] = burst.tenant
		bodies[i] = map[string]any{"providerId": "mock", "input": "overload a b c d e f g h", "conversationId": conv,
			"idempotencyKey": fmt.Sprintf("%s-%d", burst.name, i),
			"config":         map[string]any{"delayMs": float64(20 + rng.IntN(200)), "repeat": float64(1 + rng.IntN(4))}}
	}
	if conv == "" {
		return
	}
	gap := s.Hold / time.Duration(max(s.Size, 1))
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, answer := r.caller.do(ctx, n, call{client: burst.name, op: "start", method: "POST",
				path: "/v1/executions", tenant: tenants[i], key: bodies[i]["idempotencyKey"].(string), body: bodies[i]})
			if status == 202 {
				r.world.addExecution(executionID(answer), tenants[i])
			}
		}()
		select {
		case <-ctx.Done():
		case <-time.After(gap):
		}
	}
	wg.Wait()
}

// restart starts a killed node again, and again while it exits at once: `caddy run` exits when
// its store cannot be opened, which it cannot while PostgreSQL is down or the node is cut from
// it — an operator's supervisor would start it again, and so does the nemesis (a node left down
// for the rest of a run leaves the cluster smaller than the schedule says). Each start gets a
// fresh context (a restart begun at the run's end must still finish); the retries stop with the
// run, whose end starts every node that is still down.
func (r *runner) restart(ctx context.Context, n *node) error {
	for {
		err := n.start(context.WithoutCancel(ctx))
		if err == nil || n.running() {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(restartPause):
		}
	}
}

// restartPause is the wait between two starts of a node that exited at once.
const restartPause = time.Second
