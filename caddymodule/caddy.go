// Package caddymodule serves the Harness Runtime API from Caddy: the HTTP handler module
// http.handlers.harness, its Caddyfile directive `harness`, and the provider guest modules in the
// namespace harness.providers.
//
// The module is configuration and lifecycle only. The protocol lives in package proxy, the rules
// and the store in package backend. What this package adds is what Caddy needs: one runtime per
// store shared across config reloads (pool.go), stores and providers as guest modules
// (providers*.go), streams that end cleanly when a config stops, metrics on Caddy's registry
// (metrics.go) and Caddy's logger.
package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyevents"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"go.opentelemetry.io/otel/trace"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/proxy"
)

func init() {
	caddy.RegisterModule(new(Harness))
	httpcaddyfile.RegisterHandlerDirective("harness", parseCaddyfile)
	// Before encode, so that protocol requests are answered before any encoder wraps the
	// response writer (SSE stays uncompressed and is flushed event by event), while everything
	// an operator puts in front — basic_auth, forward_auth, request_header, header, rewrite,
	// request_body, timeouts — still runs first. It also keeps a catch-all `handle { … }`
	// fallback from shadowing /v1: handle blocks come after encode. Requests outside the
	// protocol's paths go on to the next handler, so the directive shares a site with anything.
	httpcaddyfile.RegisterDirectiveOrder("harness", httpcaddyfile.Before, "encode")
}

// Harness serves the Harness Runtime API (/healthz, /v1/…) over a durable runtime. Requests for
// any other path are passed to the next handler; if nothing after it answers them, they get
// the JSON 404 Problem instead of Caddy's empty 200 (fallback.go).
//
// Every Harness handler that names the same store (data directory) shares one runtime (the store and the
// live executions), also across config reloads: a reload keeps every execution, event and
// idempotency record, and running executions keep running. The providers of the most recently
// loaded config are the ones new executions can use.
type Harness struct {
	// Where executions are kept: a guest module in the namespace harness.stores, named by its
	// "backend" key, e.g. {"backend": "bolt", "path": "/var/lib/harness"} (store_bolt.go).
	// Default: the bolt store in data_dir.
	StoreRaw json.RawMessage `json:"store,omitempty" caddy:"namespace=harness.stores inline_key=backend"`

	// Directory of the bolt store (one bbolt file inside it), created if missing: the same as
	// store {"backend": "bolt", "path": …}, kept from before stores were modules. Giving both
	// store and data_dir is an error. Default: the "harness" folder in Caddy's data directory
	// ({caddy.AppDataDir}/harness).
	DataDir string `json:"data_dir,omitempty"`

	// Interval of the SSE keep-alive comment on event streams. Default: 15s.
	Heartbeat caddy.Duration `json:"heartbeat,omitempty"`

	// Largest accepted request body in bytes; larger bodies answer 413 VALIDATION_ERROR.
	// Default: 1 MiB.
	MaxBodySize int64 `json:"max_body_size,omitempty"`

	// Bound on waiting for a provider's cleanup when an execution is cancelled. Default: 30s.
	// Read when the runtime is opened: a reload that changes it takes effect after a restart.
	CancelTimeout caddy.Duration `json:"cancel_timeout,omitempty"`

	// Terminal executions older than this are deleted with their events. Default: 0, keep
	// forever. Read when the runtime is opened, like cancel_timeout.
	Retention caddy.Duration `json:"retention,omitempty"`

	// How long the stream log behind the conversation and tenant streams keeps an entry: a
	// cursor older than that is answered as expired (docs/protocol.md §15.8). Default: 0, as
	// long as retention keeps executions (forever when retention is 0); never longer than
	// retention. Read when the runtime is opened, like cancel_timeout.
	StreamRetention caddy.Duration `json:"stream_retention,omitempty"`

	// Per-execution limits on what one execution adds to the store: its number of events and
	// the bytes of their JSON. A provider emission that would exceed one fails the execution
	// with one run.failed (PROVIDER_ERROR, the message names the limit) and stops its provider.
	// Defaults: 100000 events, 32 MiB. Read when the runtime is opened, like cancel_timeout.
	MaxEvents     int   `json:"max_events,omitempty"`
	MaxEventBytes int64 `json:"max_event_bytes,omitempty"`

	// Browser origins (scheme://host[:port]) besides the API's own from which requests are
	// served, e.g. "https://console.example.com". A request whose Origin header names any other
	// origin answers 403 ORIGIN_NOT_ALLOWED; requests without Origin (SDKs, curl) are always
	// served. "null" cannot be listed. Listed origins get CORS headers and preflight answers
	// (proxy/cors.go). Default: none, only same-origin browser requests.
	AllowedOrigins []string `json:"allowed_origins,omitempty"`

	// The providers executions can use, in the order the runtime describes them. Each is a
	// guest module in the namespace harness.providers, named by its "provider" key, e.g.
	// {"provider": "mock"} or {"provider": "acp", "id": "claude", "command": "…"}.
	// Default: the mock provider alone.
	ProvidersRaw []json.RawMessage `json:"providers,omitempty" caddy:"namespace=harness.providers inline_key=provider"`

	// Receivers told when an execution needs someone or has finished (docs/webhooks.md).
	// Read when the runtime is opened, like cancel_timeout.
	Webhooks []Webhook `json:"webhooks,omitempty"`

	// How long an action may wait for an answer before it is answered reject by the actor
	// expiry, by provider id ("*": every provider without its own); a start's
	// actionTimeoutSeconds overrides it. Default: none, an action waits as long as its
	// execution. Standing rules of the configuration (approvals.go). Both are read when the
	// runtime is opened, like webhooks.
	ActionTimeouts map[string]caddy.Duration `json:"action_timeouts,omitempty"`
	ActionRules    []ActionRule              `json:"action_rules,omitempty"`

	// Path prefix of the web console (package console), e.g. "/console/"; it must start and end
	// with "/". Default: "", no console. See console.go.
	Console string `json:"console,omitempty"`

	// Tenant names the caller's tenant with a placeholder resolved per request, e.g.
	// "{http.auth.user.id}" behind basic_auth. When set, every conversation and execution
	// belongs to the tenant that created it and other tenants get what an unknown id gets; a
	// request whose tenant resolves to nothing answers 401 UNAUTHENTICATED. Default: off (one
	// anonymous tenant).
	Tenant string `json:"tenant,omitempty"`

	// Identity names who is behind each request with a placeholder resolved per request, e.g.
	// "{http.auth.user.id}" behind basic_auth. When set, action.responded and run.cancelled
	// record it as `actor` {id} in their data: who answered, who cancelled. A request whose
	// identity resolves to nothing is served all the same; its events name nobody. Default:
	// off (no event names anyone). See identity.go.
	Identity string `json:"identity,omitempty"`

	// MaxRunning bounds how many executions each tenant may have non-terminal at once; a start
	// beyond it answers 429 RATE_LIMITED with Retry-After. It is the tenant's total over every
	// node of a cluster (decided in the start's commit). Without tenant it bounds all callers
	// together. Default: 0, no bound.
	MaxRunning int `json:"max_running,omitempty"`

	// Budgets bound what tenants spend (tokens, cost) per day or month, and a named tenant's
	// running executions (docs/usage.md). See budgets.go.
	Budgets []Budget `json:"budgets,omitempty"`

	logger   *slog.Logger
	tracer   trace.TracerProvider // the process's (tracing.go); nil until provisioned
	store    StoreModule          // the store module (StoreRaw, or bolt in DataDir), provisioned
	storeKey string               // its identity, the pool key
	shared   *sharedRuntime       // nil until acquired from the pool

	mu      sync.Mutex
	handler *proxy.Handler // nil until the store is open (see protocolHandler)
	stopped bool           // the config is stopping: streams of a handler created now end at once

	consoleOnce    sync.Once
	consoleHandler http.Handler // the console's file server, built on first use (see console.go)
}

// CaddyModule returns the Caddy module information.
func (*Harness) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.harness",
		New: func() caddy.Module { return new(Harness) },
	}
}

// Provision loads the store module and the providers, takes the shared runtime of the store and registers
// the providers with it, and arranges for streams to end when this config stops. It opens no
// store: the harness app does when Caddy starts the config (app.go), so that `caddy validate`
// leaves a live node's store, lease and executions alone.
func (h *Harness) Provision(ctx caddy.Context) error {
	h.logger = ctx.Slogger()
	if err := h.checkSettings(); err != nil {
		return err
	}

	tracer, err := acquireTracing(h.logger)
	if err != nil {
		return err
	}
	h.tracer = tracer // released by Cleanup, which Caddy calls also when Provision fails

	if err := h.loadStore(ctx); err != nil {
		return err
	}

	list, err := h.loadProviders(ctx)
	if err != nil {
		return err
	}
	providers := list.current()

	metrics := processMetrics()
	if err := metrics.register(ctx.GetMetricsRegistry()); err != nil {
		return err
	}

	webhooks, err := h.resolvedWebhooks()
	if err != nil {
		return err
	}
	settings := runtimeSettings{
		webhooks:      webhooks,
		approvals:     h.approvalSettings(),
		cancelTimeout: time.Duration(h.CancelTimeout),
		retention:     time.Duration(h.Retention),
		streamLog:     time.Duration(h.StreamRetention),
		maxEvents:     h.MaxEvents,
		maxEventBytes: h.MaxEventBytes,
	}
	shared, err := acquireRuntime(h.store, settings, h.logger, metrics)
	if err != nil {
		return err
	}
	h.shared = shared
	if err := shared.attach(h, providers); err != nil {
		return err
	}
	// The runtime opens when Caddy starts this config, not now: validate provisions it too.
	app, err := harnessApp(ctx)
	if err != nil {
		return err
	}
	app.use(shared)
	shared.budgets.set(h.budgetLimits())
	usageMetrics().nameTenants(h.Budgets)
	h.watchProviders(list)
	if rt := shared.openedRuntime(); rt != nil {
		h.handler = h.newProtocolHandler(rt)
	}

	// Open streams keep an old config's server draining forever (Caddy's default grace period
	// is eternal), and on exit Caddy waits for them before Cleanup ever runs. Ending them on the
	// "stopping" event lets reloads and stops finish; clients resume from their cursor.
	events, err := ctx.App("events")
	if err != nil {
		return err
	}
	if err := events.(*caddyevents.App).On("stopping", eventHandlerFunc(h.stop)); err != nil {
		return err
	}
	return events.(*caddyevents.App).On("started", eventHandlerFunc(func() { announceListeners(ctx, h) }))
}

// Validate reports settings the handler cannot work with. Provision checks them too, first,
// so that a bad value never opens the store.
func (h *Harness) Validate() error {
	return h.checkSettings()
}

func (h *Harness) checkSettings() error {
	if err := h.checkConsole(); err != nil {
		return err
	}
	if err := h.checkWebhooks(); err != nil {
		return err
	}
	if err := h.checkBudgets(); err != nil {
		return err
	}
	if err := h.checkApprovals(); err != nil {
		return err
	}
	switch {
	case h.StoreRaw != nil && h.DataDir != "":
		return errors.New("both store and data_dir are set: data_dir is the bolt store's path, so give one of them (store bolt <dir>, or data_dir <dir>)")
	case h.Heartbeat < 0:
		return fmt.Errorf("heartbeat must not be negative, got %s", time.Duration(h.Heartbeat))
	case h.MaxBodySize < 0:
		return fmt.Errorf("max_body_size must not be negative, got %d", h.MaxBodySize)
	case h.CancelTimeout < 0:
		return fmt.Errorf("cancel_timeout must not be negative, got %s", time.Duration(h.CancelTimeout))
	case h.Retention < 0:
		return fmt.Errorf("retention must not be negative, got %s", time.Duration(h.Retention))
	case h.StreamRetention < 0:
		return fmt.Errorf("stream_retention must not be negative, got %s", time.Duration(h.StreamRetention))
	case h.MaxEvents < 0:
		return fmt.Errorf("max_events must not be negative, got %d", h.MaxEvents)
	case h.MaxEventBytes < 0:
		return fmt.Errorf("max_event_bytes must not be negative, got %d", h.MaxEventBytes)
	}
	for _, origin := range h.AllowedOrigins {
		if _, err := proxy.NormalizeOrigin(origin); err != nil {
			return fmt.Errorf("allowed_origins: %w", err)
		}
	}
	return h.checkTenantSettings()
}

// Cleanup ends this config's streams and releases its reference to the shared runtime; the
// runtime closes when no config uses its store any more.
func (h *Harness) Cleanup() error {
	if h.tracer != nil {
		defer releaseTracing(h.logger) // after the runtime's release: it flushes its last spans
	}
	h.stop()
	h.mu.Lock()
	handler := h.handler
	h.mu.Unlock()
	if handler != nil && !handler.WaitDetached(detachedStreamsGrace) {
		h.logger.Warn("harness: detached SSE streams still open at cleanup", slog.Duration("waited", detachedStreamsGrace))
	}
	h.mu.Lock()
	shared := h.shared
	h.shared = nil // requests still draining get a 503 instead of a runtime that may close
	h.mu.Unlock()
	if shared == nil {
		return nil
	}
	shared.detach(h)
	_, err := runtimePool.Delete(h.storeKey)
	return err
}

// detachedStreamsGrace bounds how long Cleanup waits for the idle SSE streams that left
// net/http (Caddy's graceful shutdown does not know them): after Shutdown each ends within about
// a second, even when its client does not read.
const detachedStreamsGrace = 5 * time.Second

// stop ends every open SSE stream of this handler and makes new ones end at once. It runs on the
// config's "stopping" event and again from Cleanup; both are harmless when repeated.
func (h *Harness) stop() {
	h.mu.Lock()
	h.stopped = true
	handler := h.handler
	h.mu.Unlock()
	if handler != nil {
		handler.Shutdown()
	}
}

func (h *Harness) newProtocolHandler(rt *backend.Runtime) *proxy.Handler {
	return proxy.New(rt, proxy.Options{
		MaxBodyBytes:   h.MaxBodySize,
		Heartbeat:      time.Duration(h.Heartbeat),
		AllowedOrigins: h.AllowedOrigins,
		Logger:         h.logger,
		Observer:       processMetrics(),
		Tenant:         h.tenantResolver(),
		Actor:          h.identityResolver(),
		MaxRunning:     h.MaxRunning,
		// A named tenant's own max_running (a budget's, budgets.go).
		TenantMaxRunning: h.tenantMaxRunning(),
		// Caddy's own writers pass the body through; `encode` is detected (events_detach.go).
		DetachIdleStreams: true,
	})
}

// eventHandlerFunc adapts a function to caddyevents.Handler.
type eventHandlerFunc func()

func (f eventHandlerFunc) Handle(_ context.Context, _ caddy.Event) error {
	f()
	return nil
}

// Interface guards
var (
	_ caddy.Module                = (*Harness)(nil)
	_ caddy.Provisioner           = (*Harness)(nil)
	_ caddy.Validator             = (*Harness)(nil)
	_ caddy.CleanerUpper          = (*Harness)(nil)
	_ caddyhttp.MiddlewareHandler = (*Harness)(nil)
	_ caddyfile.Unmarshaler       = (*Harness)(nil)
	_ caddyevents.Handler         = eventHandlerFunc(nil)
)
