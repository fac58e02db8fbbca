package a2a

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/harness-edge/harness-edge/backend/providers/internal/discovery"
)

// Agent is one configured A2A agent: it reads the agent card, derives the provider manifest
// from it and is the provider (see Provider). Build it with New, call Start once, Close when the
// configuration goes away. Close does not stop executions: they keep relaying, as executions of
// other providers keep running across a reload.
type Agent struct {
	s    *settings
	http *http.Client
	log  *slog.Logger

	discovery *discovery.Discovery // reads the card (at Start, then in the background)

	mu     sync.Mutex
	card   *a2a.AgentCard      // nil until read
	iface  *a2a.AgentInterface // the card's interface the client speaks to (card.go)
	client *a2aclient.Client   // built for iface

	provider *Provider
}

// New validates cfg. It contacts nothing.
func New(cfg Config, logger *slog.Logger) (*Agent, error) {
	s, err := cfg.settings()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	a := &Agent{
		s: s,
		// No client-wide timeout: streams last as long as tasks do. Calls are bounded by their
		// contexts (RequestTimeout).
		http: &http.Client{Transport: headerTransport{header: s.header, next: transport}},
		log:  logger,
	}
	a.provider = &Provider{agent: a}
	unusable := func(err error) bool { return errors.Is(err, errUnusableCard) }
	a.discovery = discovery.New(discovery.Config{
		Read:         a.readCard,
		Final:        unusable,
		GiveUp:       unusable,
		FirstTimeout: s.cardTimeout,
		RetryTimeout: s.requestTimeout,
		Log:          logger,
		What:         "the A2A agent's card",
		Attrs:        []any{"agent", s.label},
	})
	return a, nil
}

// Provider is the provider to register (one instance for the Agent's lifetime).
func (a *Agent) Provider() *Provider { return a.provider }

// Start reads the agent card, waiting at most the card timeout (and ctx). If the agent does not
// answer in time, Start returns nil and keeps trying in the background until it does or Close
// is called; Watch callbacks run when the card arrives. A card that is read but unusable (no
// JSON-RPC interface in A2A 1.x or 0.3.x) is an error.
func (a *Agent) Start(ctx context.Context) error { return a.discovery.Start(ctx) }

var errUnusableCard = errors.New("a2a: unusable agent card")

// readCard fetches the card, chooses the interface to speak to (card.go) and builds the client
// for it: A2A 1.0 JSON-RPC through the SDK's client, A2A 0.3 JSON-RPC through its 0.3 client
// (a2acompat/a2av0), both on the SDK's 1.0 types, which the rest of the provider maps from.
func (a *Agent) readCard(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.s.cardURL, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set(a2a.SvcParamVersion, cardVersion)
	resp, err := a.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("agent card: HTTP %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	card, err := decodeCard(body)
	if err != nil {
		return fmt.Errorf("%w: %s is not an agent card: %v", errUnusableCard, a.s.cardURL, err)
	}
	iface, err := chooseInterface(card)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", errUnusableCard, a.s.cardURL, err)
	}
	// The client is built for the chosen interface alone, so that it speaks exactly that one.
	chosen := *card
	chosen.SupportedInterfaces = []*a2a.AgentInterface{iface}
	client, err := a2aclient.NewFromCard(ctx, &chosen,
		a2aclient.WithDefaultsDisabled(),
		a2aclient.WithJSONRPCTransport(a.http),
		a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: a.http}),
	)
	if err != nil {
		return fmt.Errorf("%w: %v", errUnusableCard, err)
	}
	a.mu.Lock()
	a.card, a.iface, a.client = card, iface, client
	a.mu.Unlock()
	return nil
}

// current returns the card, the interface spoken to and its client, or false while the card
// has not been read.
func (a *Agent) current() (*a2a.AgentCard, *a2a.AgentInterface, *a2aclient.Client, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.card, a.iface, a.client, a.card != nil
}

// Watch registers fn, called (on another goroutine) when the manifest changed because the card
// arrived after Start returned.
func (a *Agent) Watch(fn func()) { a.discovery.Watch(fn) }

// Close stops the background card retry and forgets the watchers. Running executions go on.
func (a *Agent) Close() { a.discovery.Close() }

// call bounds one call to the agent (not a stream) by the request timeout.
func (a *Agent) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, a.s.requestTimeout)
}
