package caddymodule

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/cluster"
	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/webhook"
)

// runtimePool holds one runtime per store (keyed by StoreModule.StoreKey) for the whole process.
//
// It is required, not an optimisation: a bbolt store is a file under an exclusive lock, and on a
// reload Caddy provisions the new config before it cleans up the old one, so a second Open of
// the same file would wait for a lock its own process holds (and a shared store must not get a
// second runtime of the same node either). Through the pool the new config takes a reference to
// the runtime the old one opened; the runtime is closed (Destruct) when the last config using
// the store is cleaned up.
var runtimePool = caddy.NewUsagePool()

// runtimeSettings are the handler settings that are fixed when a runtime is opened.
type runtimeSettings struct {
	cancelTimeout time.Duration
	retention     time.Duration
	maxEvents     int    // per execution
	maxEventBytes int64  // per execution
	webhooks      string // the subscriptions, secrets resolved, as JSON (comparable)
	approvals     string // action timeouts and configured rules, as JSON (approvals.go)

	streamLog time.Duration // stream_retention
}

// sharedRuntime is the pool's value: one runtime, and the handlers (across configs) using it.
type sharedRuntime struct {
	key      string      // the store's identity, the pool key
	store    StoreModule // opens the store (again, after a locked first attempt)
	settings runtimeSettings
	logger   *slog.Logger // forwards to the newest attached handler's logger, see logging.go
	log      *currentLogger
	observer backend.Observer

	mu sync.Mutex
	// rt is nil until Caddy starts a config that uses the store (App.Start) or a request comes,
	// and while another process holds the store's lock (see start).
	rt *backend.Runtime
	// users are the attached handlers in provisioning order. The newest user's providers are the
	// registered ones: a reload provisions the new config last, so its providers win; when a
	// config is cleaned up without ever having been switched to (a reload that failed after our
	// handler was provisioned), the providers of the config still running are registered again.
	users  []providerUser
	closed bool
	// budgets are the runtime's (Options.Budgets), with the newest config's limits.
	budgets budgetSwitch
}

type providerUser struct {
	handler   *Harness
	providers []backend.Provider
}

// acquireRuntime takes a reference to the runtime of st, reserving it if this process has none.
// The caller must release it with runtimePool.Delete(st.StoreKey()).
//
// It opens nothing: provisioning must have no side effect on the store, since `caddy validate`
// and `caddy adapt --validate` provision the config too, in a process of their own, while a
// server may be running on the same store (opening it would take the live node's lease epoch or
// its bbolt lock). The runtime is opened when Caddy starts the config (App.Start, app.go), or on
// the first request, whichever comes first; a reload finds it open already and keeps it.
//
// providers are registered when the runtime is opened, so that restart recovery can resume
// the executions of providers that can re-attach (backend.Resumer) instead of failing them.
func acquireRuntime(st StoreModule, settings runtimeSettings, logger *slog.Logger, observer backend.Observer) (*sharedRuntime, error) {
	key := st.StoreKey()
	val, loaded, err := runtimePool.LoadOrNew(key, func() (caddy.Destructor, error) {
		log := newCurrentLogger(logger.Handler())
		return &sharedRuntime{
			key:      key,
			store:    st,
			settings: settings,
			logger:   slog.New(log),
			log:      log,
			observer: observer,
		}, nil
	})
	if err != nil {
		return nil, err
	}
	s := val.(*sharedRuntime)
	if loaded && s.settings != settings {
		logger.Warn("cancel_timeout, retention, max_events, max_event_bytes, webhooks, action_timeout and action_rule are fixed while the runtime is open; the new values take effect after a restart",
			slog.String("store", key),
			slog.Duration("cancel_timeout_in_effect", s.settings.cancelTimeout),
			slog.Duration("retention_in_effect", s.settings.retention),
			slog.Int("max_events_in_effect", s.settings.maxEvents),
			slog.Int64("max_event_bytes_in_effect", s.settings.maxEventBytes))
	}
	return s, nil
}

// isStoreLocked reports whether Open failed only because another process holds the store.
func isStoreLocked(err error) bool {
	return errors.Is(err, store.ErrLocked)
}

// open opens the runtime with providers registered; s.mu must be held or s not yet shared.
func (s *sharedRuntime) open(providers []backend.Provider) error {
	st, err := s.store.OpenStore(StoreOptions{Logger: s.logger, ObserveCommit: s.observer.StoreCommit})
	if err != nil {
		return err
	}
	// A store several nodes share gets the runtime's cluster side, with the store's lease
	// (store postgres { lease … }): the node renews it and judges the other nodes' by it.
	var nodes backend.Cluster // an interface holding a nil *cluster.Cluster would not be nil
	if shared, ok := st.(store.Cluster); ok {
		var lease time.Duration
		if l, ok := s.store.(interface{ LeaseDuration() time.Duration }); ok {
			lease = l.LeaseDuration()
		}
		nodes = cluster.New(shared, cluster.Options{Lease: lease})
	}
	var storeTimeout time.Duration
	if l, ok := s.store.(interface{ StoreTimeout() time.Duration }); ok {
		storeTimeout = l.StoreTimeout()
	}
	var webhooks backend.Webhooks // an interface holding a nil *Notifier would not be nil
	if subs := decodeWebhooks(s.settings.webhooks); len(subs) > 0 {
		hooks, _ := s.observer.(webhook.Observer) // the metrics count deliveries
		n, err := webhook.New(webhook.Config{Subscriptions: subs, Logger: executionLogger(s.logger), Observer: hooks, TracerProvider: currentTracerProvider()})
		if err != nil {
			st.Close()
			return fmt.Errorf("opening the harness runtime on the store %s: %w", s.key, err)
		}
		webhooks = n
	}
	rt, err := backend.Open(backend.Options{
		Store:                     st, // the runtime owns it from here (and closes it if Open fails)
		Providers:                 providers,
		Cluster:                   nodes,
		StoreTimeout:              storeTimeout,
		CancelTimeout:             s.settings.cancelTimeout,
		Retention:                 s.settings.retention,
		StreamLogRetention:        s.settings.streamLog,
		MaxEventsPerExecution:     s.settings.maxEvents,
		MaxEventBytesPerExecution: s.settings.maxEventBytes,
		Webhooks:                  webhooks,
		Approvals:                 decodeApprovals(s.settings.approvals),
		Logger:                    s.logger,
		Observer:                  s.observer,
		TracerProvider:            currentTracerProvider(),
		Budgets:                   &s.budgets,
	})
	if err != nil {
		return fmt.Errorf("opening the harness runtime on the store %s: %w", s.key, err)
	}
	s.budgets.open(st, nodes != nil)
	s.rt = rt
	openRuntimes.Store(rt, struct{}{}) // for log lines (logging_executions.go)
	return nil
}

// openedRuntime returns the runtime if it is open, without trying to open it.
func (s *sharedRuntime) openedRuntime() *backend.Runtime {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rt
}

// start opens the runtime unless it is open: Caddy is starting a config that serves from it
// (App.Start). Another process holding the store (a bbolt file locked by a server still
// draining) is not an error: the first request opens it instead, once the lock is free.
func (s *sharedRuntime) start() error {
	_, err := s.runtime()
	if isStoreLocked(err) {
		s.logger.Warn("store is locked by another process; opening it on the first request instead",
			slog.String("store", s.key), slog.Any("error", err))
		return nil
	}
	return err
}

// runtime returns the open runtime, opening it now if it is not open yet (see start).
func (s *sharedRuntime) runtime() (*backend.Runtime, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("the runtime is closed")
	}
	if s.rt != nil {
		return s.rt, nil
	}
	var providers []backend.Provider
	if len(s.users) > 0 {
		providers = s.users[len(s.users)-1].providers
	}
	if err := s.open(providers); err != nil {
		return nil, err
	}
	s.logger.Info("opened the harness store", slog.String("store", s.key))
	return s.rt, nil
}

// attach registers h's providers (they replace those of any older config) and makes h the
// newest user. On error nothing changes.
func (s *sharedRuntime) attach(h *Harness, providers []backend.Provider) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rt != nil {
		if err := s.rt.SetProviders(providers); err != nil {
			return err
		}
	}
	s.users = append(s.users, providerUser{handler: h, providers: providers})
	s.log.follow(h.logger.Handler())
	return nil
}

// detach removes h. If h was the newest user, the next newest one's providers and logger take
// over again (see users).
func (s *sharedRuntime) detach(h *Harness) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.users, func(u providerUser) bool { return u.handler == h })
	if i < 0 {
		return
	}
	wasNewest := i == len(s.users)-1
	s.users = slices.Delete(s.users, i, i+1)
	if !wasNewest || len(s.users) == 0 {
		return
	}
	newest := s.users[len(s.users)-1]
	s.log.follow(newest.handler.logger.Handler())
	if s.rt != nil {
		if err := s.rt.SetProviders(newest.providers); err != nil {
			s.logger.Error("restoring the providers of the running config", slog.Any("error", err))
		}
	}
}

// replace changes the providers of h (a provider set changed, see ProviderSet) and registers
// them if h is the newest user. A refusal (two providers with one id) is logged; the providers
// registered before stay.
func (s *sharedRuntime) replace(h *Harness, providers []backend.Provider) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.users, func(u providerUser) bool { return u.handler == h })
	if i < 0 {
		return
	}
	if i == len(s.users)-1 && s.rt != nil {
		if err := s.rt.SetProviders(providers); err != nil {
			s.logger.Error("registering changed providers", slog.Any("error", err))
			return
		}
	}
	s.users[i].providers = providers
}

// Destruct closes the runtime (and its store) when the last config using the store is gone.
func (s *sharedRuntime) Destruct() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.rt == nil {
		return nil
	}
	openRuntimes.Delete(s.rt)
	err := s.rt.Close()
	s.rt = nil
	return err
}

var _ caddy.Destructor = (*sharedRuntime)(nil)
