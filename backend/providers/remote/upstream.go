package remote

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Upstream is one configured upstream server and the providers it serves here. Build it with
// New, call Start once, read Providers (and again after each Watch notification), Close when the
// configuration goes away. Close does not stop executions: they keep relaying, as executions of
// other providers keep running across a reload.
type Upstream struct {
	s      *settings
	client *sdk.Client
	log    *slog.Logger
	convMu sync.Mutex // serializes finding-or-creating upstream conversations

	mu        sync.Mutex
	manifests []api.ProviderManifest // nil until read
	providers map[string]*Provider   // by local id; stable instances
	watchers  []func()
	stop      context.CancelFunc
	done      chan struct{}
}

// New validates cfg and builds the upstream's client. It contacts nothing.
func New(cfg Config, logger *slog.Logger) (*Upstream, error) {
	s, err := cfg.settings()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if s.tls != nil {
		transport.TLSClientConfig = s.tls
	}
	opts := []sdk.Option{
		sdk.WithHTTPClient(&http.Client{Transport: contactTransport{next: transport}}),
		sdk.WithLogger(logger),
		sdk.WithRetry(s.retry),
	}
	for name, values := range s.header {
		for _, v := range values {
			opts = append(opts, sdk.WithHeader(name, v))
		}
	}
	client, err := sdk.New(s.base, opts...)
	if err != nil {
		return nil, fmt.Errorf("remote: %w", err)
	}
	return &Upstream{s: s, client: client, log: logger, providers: make(map[string]*Provider)}, nil
}

// Start reads the upstream's manifests, waiting at most the manifest timeout (and ctx). If the
// upstream does not answer in time, Start returns nil and keeps trying in the background until
// it does or Close is called; Watch callbacks run when the manifests arrive. An upstream that
// answers but does not serve the configured upstream provider is an error.
func (u *Upstream) Start(ctx context.Context) error {
	readCtx, cancel := context.WithTimeout(ctx, u.s.manifestTimeout)
	err := u.readManifests(readCtx)
	cancel()
	if err == nil {
		return nil
	}
	if errors.Is(err, errProviderMissing) {
		return err
	}
	u.log.Warn("upstream did not answer with its manifests; serving without them and retrying in the background",
		"upstream", u.s.label, "error", err)
	bg, stop := context.WithCancel(context.Background())
	u.mu.Lock()
	u.stop, u.done = stop, make(chan struct{})
	done := u.done
	u.mu.Unlock()
	go func() {
		defer close(done)
		u.retryManifests(bg)
	}()
	return nil
}

var errProviderMissing = errors.New("remote: the upstream does not serve the configured provider")

// retryManifests reads the manifests until it succeeds or ctx ends, with capped backoff.
func (u *Upstream) retryManifests(ctx context.Context) {
	wait := 500 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		readCtx, cancel := context.WithTimeout(ctx, u.s.requestTimeout)
		err := u.readManifests(readCtx)
		cancel()
		if err == nil {
			u.log.Info("read the upstream's manifests", "upstream", u.s.label)
			u.notify()
			return
		}
		if ctx.Err() != nil {
			return
		}
		u.log.Debug("upstream manifests still unavailable", "upstream", u.s.label, "error", err)
		wait = min(2*wait, 30*time.Second)
	}
}

func (u *Upstream) readManifests(ctx context.Context) error {
	manifests, err := u.client.ListCapabilities(ctx)
	if err != nil {
		return err
	}
	var usable []api.ProviderManifest
	for _, m := range manifests {
		if m.ID == "" || m.ProtocolVersion != api.ProviderManifestProtocolVersionN20260902 {
			u.log.Warn("ignoring an upstream provider with an unusable manifest", "upstream", u.s.label, "provider", m.ID, "protocolVersion", m.ProtocolVersion)
			continue
		}
		usable = append(usable, m)
	}
	if want := u.s.upstreamProvider; want != "" && !slices.ContainsFunc(usable, func(m api.ProviderManifest) bool { return m.ID == want }) {
		ids := make([]string, len(usable))
		for i, m := range usable {
			ids[i] = m.ID
		}
		err := fmt.Errorf("%w: upstream %s has no provider %q (it has %q)", errProviderMissing, u.s.label, want, ids)
		u.log.Error("upstream provider missing", "error", err)
		return err
	}
	u.mu.Lock()
	u.manifests = usable
	u.mu.Unlock()
	return nil
}

// Watch registers fn, called (on another goroutine) when Providers has a new answer because
// the manifests arrived after Start returned.
func (u *Upstream) Watch(fn func()) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.watchers = append(u.watchers, fn)
}

func (u *Upstream) notify() {
	u.mu.Lock()
	watchers := slices.Clone(u.watchers)
	u.mu.Unlock()
	for _, fn := range watchers {
		fn()
	}
}

// Close stops the background manifest retry and forgets the watchers. Running executions go on.
func (u *Upstream) Close() {
	u.mu.Lock()
	stop, done := u.stop, u.done
	u.watchers = nil
	u.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

// Providers returns the providers to register, in the upstream's order. With an upstream
// provider configured it is always that one (see Provider.Manifest for how it describes itself
// before the upstream answered); otherwise one per upstream manifest, none until they are read.
func (u *Upstream) Providers() []backend.Provider {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.s.upstreamProvider != "" {
		return []backend.Provider{u.providerLocked(u.s.id, u.s.upstreamProvider)}
	}
	out := make([]backend.Provider, 0, len(u.manifests))
	for _, m := range u.manifests {
		out = append(out, u.providerLocked(m.ID, m.ID))
	}
	return out
}

func (u *Upstream) providerLocked(localID, upstreamID string) *Provider {
	p, ok := u.providers[localID]
	if !ok {
		p = &Provider{up: u, id: localID, upstreamID: upstreamID, running: make(map[string]*relayEntry)}
		u.providers[localID] = p
	}
	return p
}

// manifest returns the upstream's manifest of id, if it has been read.
func (u *Upstream) manifest(id string) (api.ProviderManifest, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, m := range u.manifests {
		if m.ID == id {
			return m, true
		}
	}
	return api.ProviderManifest{}, false
}

// call bounds one upstream call (not a stream) by the request timeout.
func (u *Upstream) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, u.s.requestTimeout)
}
