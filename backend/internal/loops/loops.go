// Package loops gives a component's background goroutines one start/stop lifecycle: every loop
// started with Go watches the same stop signal, and Stop raises it once and waits for all of
// them. The runtime (retention, the cluster's loops and tails, stranded recovery) and the
// webhook sender use it instead of a stop channel, a done channel and a WaitGroup each.
package loops

import (
	"context"
	"runtime/pprof"
	"sync"
)

// Group is a set of loops stopped together. The zero value is ready to use; a Group must not
// be copied after first use.
type Group struct {
	mu      sync.Mutex
	ctx     context.Context // its Done channel is the stop signal
	cancel  context.CancelFunc
	stopped bool
	running sync.WaitGroup
}

func (g *Group) initLocked() {
	if g.ctx == nil {
		g.ctx, g.cancel = context.WithCancel(context.Background())
	}
}

// Go runs fn in a goroutine until it returns; stop is closed when Stop is called. The goroutine
// carries the pprof label loop=name, so a goroutine dump says which loop is which. It reports
// false, and fn does not run, once Stop was called: a caller that must not leak a loop (a tail
// started by a late subscription) checks it.
func (g *Group) Go(name string, fn func(stop <-chan struct{})) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.initLocked()
	if g.stopped {
		return false
	}
	g.running.Add(1) // under mu, so never concurrent with the Wait in Stop
	stop := g.ctx.Done()
	go pprof.Do(g.ctx, pprof.Labels("loop", name), func(context.Context) {
		defer g.running.Done()
		fn(stop)
	})
	return true
}

// Stopping is the stop signal, for code that is not one of the loops but waits beside them (a
// command being answered, a walk that should end with the runtime).
func (g *Group) Stopping() <-chan struct{} { return g.Context().Done() }

// Context is cancelled when Stop is called: the loops' store calls and requests end with them.
func (g *Group) Context() context.Context {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.initLocked()
	return g.ctx
}

// Stop raises the stop signal and waits for every loop to return. Safe to call more than once,
// and on a Group that never ran a loop.
func (g *Group) Stop() {
	g.mu.Lock()
	g.initLocked()
	g.stopped = true
	g.cancel()
	g.mu.Unlock()
	g.running.Wait()
}
