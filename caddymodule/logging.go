package caddymodule

import (
	"context"
	"log/slog"
	"sync/atomic"
)

// currentLogger is the slog.Handler of a shared runtime. The runtime outlives the config that
// opened it, and each config has its own loggers (a reload may change the log outputs and closes
// the old ones), so the runtime's records go to the handler of the newest config using it.
type currentLogger struct {
	target atomic.Pointer[slog.Handler]
}

func newCurrentLogger(h slog.Handler) *currentLogger {
	l := new(currentLogger)
	l.follow(h)
	return l
}

// follow makes h the destination of every record from now on.
func (l *currentLogger) follow(h slog.Handler) { l.target.Store(&h) }

func (l *currentLogger) Enabled(ctx context.Context, level slog.Level) bool {
	return derivedHandler{root: l}.Enabled(ctx, level)
}

func (l *currentLogger) Handle(ctx context.Context, r slog.Record) error {
	return derivedHandler{root: l}.Handle(ctx, r)
}

func (l *currentLogger) WithAttrs(attrs []slog.Attr) slog.Handler {
	return derivedHandler{root: l}.WithAttrs(attrs)
}

func (l *currentLogger) WithGroup(name string) slog.Handler {
	return derivedHandler{root: l}.WithGroup(name)
}

// derivedHandler replays WithAttrs/WithGroup on whatever handler is current when a record is
// handled; the runtime derives its loggers once, at Open.
type derivedHandler struct {
	root   *currentLogger
	derive func(slog.Handler) slog.Handler // nil: the current handler as is
}

func (d derivedHandler) current() slog.Handler {
	h := *d.root.target.Load()
	if d.derive != nil {
		h = d.derive(h)
	}
	return h
}

func (d derivedHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return d.current().Enabled(ctx, level)
}

func (d derivedHandler) Handle(ctx context.Context, r slog.Record) error {
	return d.current().Handle(ctx, r)
}

func (d derivedHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return d.then(func(h slog.Handler) slog.Handler { return h.WithAttrs(attrs) })
}

func (d derivedHandler) WithGroup(name string) slog.Handler {
	return d.then(func(h slog.Handler) slog.Handler { return h.WithGroup(name) })
}

func (d derivedHandler) then(step func(slog.Handler) slog.Handler) derivedHandler {
	prev := d.derive
	return derivedHandler{root: d.root, derive: func(h slog.Handler) slog.Handler {
		if prev != nil {
			h = prev(h)
		}
		return step(h)
	}}
}

var (
	_ slog.Handler = (*currentLogger)(nil)
	_ slog.Handler = derivedHandler{}
)
