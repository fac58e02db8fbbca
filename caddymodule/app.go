package caddymodule

import (
	"sync"

	"github.com/caddyserver/caddy/v2"
)

func init() {
	caddy.RegisterModule(new(App))
}

// App is the Caddy app "harness": it opens the runtimes of its config's handlers when Caddy
// starts the config, never before.
//
// Caddy provisions a config in three situations — `caddy run` and every reload, which then
// start it, and `caddy validate` (and `caddy adapt --validate`), which provision it in a process
// of their own and throw it away — and gives a module no way to tell them apart while it
// provisions. Opening a runtime is not free of side effects: on a shared store it joins the
// cluster (runs the schema migrations, takes a new lease epoch, which fences a live node of the
// same name, and recovers or fails that node's executions), and on bbolt it takes the file's
// lock. So handlers only reserve their runtime in Provision (runtimePool, pool.go) and name it
// here; Caddy starts only a config that is to serve, and an app's Start is that moment. The
// handlers load this app themselves (ctx.App), so a config needs no "harness" app of its own.
//
// A reload of the running config finds its store's runtime open already (the pool keeps it
// across configs), so Start changes nothing: same runtime, same lease. A runtime whose store
// another process holds (a bbolt file locked by a server still draining) is opened on the first
// request instead, as before.
type App struct {
	ctx      caddy.Context // for the http app's servers at Start
	mu       sync.Mutex
	runtimes []*sharedRuntime // of this config's handlers, in provisioning order (may repeat)
}

// CaddyModule returns the Caddy module information.
func (*App) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "harness",
		New: func() caddy.Module { return new(App) },
	}
}

// Provision keeps the config's context: Start looks up the http app's listen addresses.
func (a *App) Provision(ctx caddy.Context) error {
	a.ctx = ctx
	return nil
}

// use names a runtime a handler of this config serves from.
func (a *App) use(s *sharedRuntime) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.runtimes = append(a.runtimes, s)
}

// Start opens every runtime this config serves from that is not open yet. A store that fails to
// open fails the start, which Caddy reports (`caddy run` exits; a reload is refused and the
// running config keeps serving). So does an address of this config that another process already
// serves (listen_exclusive.go).
func (a *App) Start() error {
	if err := refuseServedAddresses(a.ctx); err != nil {
		return err
	}
	a.mu.Lock()
	runtimes := append([]*sharedRuntime(nil), a.runtimes...)
	a.mu.Unlock()
	for _, s := range runtimes {
		if err := s.start(); err != nil {
			return err
		}
	}
	return nil
}

// Stop does nothing: a runtime outlives the config that started it while a newer config uses
// its store, and closes when the last one is cleaned up (sharedRuntime.Destruct).
func (*App) Stop() error { return nil }

// harnessApp is the config's harness app, loaded (and provisioned) on first use.
func harnessApp(ctx caddy.Context) (*App, error) {
	app, err := ctx.App("harness")
	if err != nil {
		return nil, err
	}
	return app.(*App), nil
}

var (
	_ caddy.App         = (*App)(nil)
	_ caddy.Provisioner = (*App)(nil)
)
