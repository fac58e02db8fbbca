package remote

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/providers/internal/discovery"
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

	discovery *discovery.Discovery // reads the manifests (at Start, then in the background)

	mu        sync.Mutex
	manifests []api.ProviderManifest // nil until read
	providers map[string]*Provider   // by local id; stable instances
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
	u := &Upstream{s: s, client: client, log: logger, providers: make(map[string]*Provider)}
	u.discovery = discovery.New(discovery.Config{
		Read:         u.readManifests,
		Final:        func(err error) bool { return errors.Is(err, errProviderMissing) },
		FirstTimeout: s.manifestTimeout,
		RetryTimeout: s.requestTimeout,
		Log:          logger,
		What:         "the upstream's manifests",
		Attrs:        []any{"upstream", s.label},
	})
	return u, nil
}

// Start reads the upstream's manifests, waiting at most the manifest timeout (and ctx). If the
// upstream does not answer in time, Start returns nil and keeps trying in the background until
// it does or Close is called; Watch callbacks run when the manifests arrive. An upstream that
// answers but does not serve the configured upstream provider is an error.
func (u *Upstream) Start(ctx context.Context) error { return u.discovery.Start(ctx) }

var errProviderMissing = errors.New("remote: the upstream does not serve the configured provider")

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
func (u *Upstream) Watch(fn func()) { u.discovery.Watch(fn) }

// Close stops the background manifest retry and forgets the watchers. Running executions go on.
func (u *Upstream) Close() { u.discovery.Close() }

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
		p = &Provider{up: u, id: localID, upstreamID: upstreamID}
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
