package a2a

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults of Config.
const (
	DefaultCardTimeout    = 5 * time.Second
	DefaultRequestTimeout = 30 * time.Second
	DefaultGoneTimeout    = 2 * time.Minute
	DefaultPollInterval   = time.Second
	// wellKnownCardPath is where A2A agents (0.3 and 1.0) publish their card under their base URL.
	wellKnownCardPath = "/.well-known/agent-card.json"
)

// Config is the trusted configuration of one A2A agent. Zero durations take the defaults.
type Config struct {
	// ID is the provider id clients use. Required.
	ID string
	// URL is the agent's base URL (its card is read from /.well-known/agent-card.json under it)
	// or the URL of its agent card itself (a path ending in .json). Required.
	URL string
	// BearerToken, when set, is sent as "Authorization: Bearer …" with every request to the
	// agent (the card included).
	BearerToken string
	// Headers are added to every request to the agent (an API key, say).
	Headers map[string]string
	// CardTimeout bounds the wait for the agent card when the provider starts; after it the
	// provider starts with a stand-in manifest and keeps reading the card in the background.
	CardTimeout time.Duration
	// RequestTimeout bounds each call to the agent other than streams (GetTask, CancelTask, a
	// non-streaming SendMessage; 0.3's tasks/get, tasks/cancel, message/send).
	RequestTimeout time.Duration
	// GoneTimeout fails an execution whose agent cannot be reached for this long.
	GoneTimeout time.Duration
	// PollInterval is how often the task is asked for (GetTask) while following it without a
	// stream (an agent that does not stream) and, as a safety net, while following a resubscribed
	// one.
	PollInterval time.Duration
}

// settings is a validated, defaulted copy of a Config.
type settings struct {
	id             string
	cardURL        string // where the card is read
	label          string // the agent as messages name it: its host
	header         http.Header
	cardTimeout    time.Duration
	requestTimeout time.Duration
	goneTimeout    time.Duration
	pollInterval   time.Duration
}

func (c Config) settings() (*settings, error) {
	if c.ID == "" || strings.TrimSpace(c.ID) != c.ID {
		return nil, errors.New("a2a: the provider needs an id without surrounding spaces")
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("a2a: agent URL %q: want http(s)://host[:port][/path], without credentials", c.URL)
	}
	for _, d := range []time.Duration{c.CardTimeout, c.RequestTimeout, c.GoneTimeout, c.PollInterval} {
		if d < 0 {
			return nil, errors.New("a2a: timeouts and intervals must not be negative")
		}
	}
	s := &settings{
		id:             c.ID,
		cardURL:        cardURL(u),
		label:          u.Host,
		header:         http.Header{},
		cardTimeout:    durationOr(c.CardTimeout, DefaultCardTimeout),
		requestTimeout: durationOr(c.RequestTimeout, DefaultRequestTimeout),
		goneTimeout:    durationOr(c.GoneTimeout, DefaultGoneTimeout),
		pollInterval:   durationOr(c.PollInterval, DefaultPollInterval),
	}
	for name, value := range c.Headers {
		if name == "" || strings.ContainsAny(name+value, "\r\n") {
			return nil, fmt.Errorf("a2a: header %q: names must be non-empty and values single-line", name)
		}
		s.header.Set(name, value)
	}
	if c.BearerToken != "" {
		if strings.ContainsAny(c.BearerToken, "\r\n") {
			return nil, errors.New("a2a: the bearer token must be a single line")
		}
		s.header.Set("Authorization", "Bearer "+c.BearerToken)
	}
	return s, nil
}

// cardURL is the card's URL: u itself when it names a JSON document, else the well-known path
// under u.
func cardURL(u *url.URL) string {
	if strings.HasSuffix(u.Path, ".json") {
		return u.String()
	}
	card := *u
	card.Path = strings.TrimSuffix(u.Path, "/") + wellKnownCardPath
	card.RawPath = ""
	return card.String()
}

func durationOr(d, fallback time.Duration) time.Duration {
	if d == 0 {
		return fallback
	}
	return d
}

// headerTransport adds the configured headers to every request (card, JSON-RPC calls, streams).
type headerTransport struct {
	header http.Header
	next   http.RoundTripper
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = withTraceContext(req) // the execution's traceparent (tracing.go)
	if len(t.header) == 0 {
		return t.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for name, values := range t.header {
		req.Header[name] = append([]string(nil), values...)
	}
	return t.next.RoundTrip(req)
}
