package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

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
	card   *a2a.AgentCard    // nil until read
	client *a2aclient.Client // built from card

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
// JSON-RPC interface, a protocol version other than 0.3.x) is an error.
func (a *Agent) Start(ctx context.Context) error { return a.discovery.Start(ctx) }

var errUnusableCard = errors.New("a2a: unusable agent card")

// readCard fetches and checks the card and builds the JSON-RPC client from it.
func (a *Agent) readCard(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.s.cardURL, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
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
	if err := checkCard(card); err != nil {
		return fmt.Errorf("%w: %s: %v", errUnusableCard, a.s.cardURL, err)
	}
	client, err := a2aclient.NewFromCard(ctx, card,
		a2aclient.WithDefaultsDisabled(),
		a2aclient.WithJSONRPCTransport(a.http),
		// Polling: a non-streaming message/send returns the task at once; the relay follows it
		// with tasks/get rather than holding one request open for the whole task.
		a2aclient.WithConfig(a2aclient.Config{Polling: true}),
	)
	if err != nil {
		return fmt.Errorf("%w: %v", errUnusableCard, err)
	}
	a.mu.Lock()
	a.card, a.client = card, client
	a.mu.Unlock()
	return nil
}

// decodeCard reads an A2A 0.3 card, or an A2A 1.0 card through the 0.3 JSON-RPC interface it
// lists among its supportedInterfaces (a 1.0 agent that keeps 0.3 compatibility); a 1.0 card
// without one is refused by checkCard.
func decodeCard(raw []byte) (*a2a.AgentCard, error) {
	var card a2a.AgentCard
	if err := json.Unmarshal(raw, &card); err != nil {
		return nil, err
	}
	var v1 struct {
		SupportedInterfaces []struct {
			URL             string `json:"url"`
			ProtocolBinding string `json:"protocolBinding"`
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"supportedInterfaces"`
	}
	if err := json.Unmarshal(raw, &v1); err != nil || card.URL != "" || len(v1.SupportedInterfaces) == 0 {
		return &card, nil
	}
	card.ProtocolVersion = "1.0" // refused below unless a 0.3 JSON-RPC interface is listed
	for _, i := range v1.SupportedInterfaces {
		if i.ProtocolBinding == string(a2a.TransportProtocolJSONRPC) && isProtocol03(i.ProtocolVersion) && i.URL != "" {
			card.URL, card.PreferredTransport, card.ProtocolVersion = i.URL, a2a.TransportProtocolJSONRPC, i.ProtocolVersion
			break
		}
	}
	return &card, nil
}

// checkCard refuses a card this provider cannot speak to, and fills A2A's defaults.
func checkCard(card *a2a.AgentCard) error {
	if card.ProtocolVersion != "" && !isProtocol03(card.ProtocolVersion) {
		return fmt.Errorf("the agent speaks A2A %s and lists no A2A 0.3 JSON-RPC interface; this provider speaks A2A 0.3 (see docs/a2a.md)", card.ProtocolVersion)
	}
	if card.PreferredTransport == "" {
		card.PreferredTransport = a2a.TransportProtocolJSONRPC // the protocol's default
	}
	jsonrpc := card.PreferredTransport == a2a.TransportProtocolJSONRPC && card.URL != ""
	jsonrpc = jsonrpc || slices.ContainsFunc(card.AdditionalInterfaces, func(i a2a.AgentInterface) bool {
		return i.Transport == a2a.TransportProtocolJSONRPC && i.URL != ""
	})
	if !jsonrpc {
		return errors.New("the card offers no JSON-RPC interface (the only A2A transport this provider speaks)")
	}
	return nil
}

func isProtocol03(v string) bool { return v == "0.3" || len(v) > 4 && v[:4] == "0.3." }

// current returns the card and client, or false while the card has not been read.
func (a *Agent) current() (*a2a.AgentCard, *a2aclient.Client, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.card, a.client, a.card != nil
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
