package remote

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/harness-edge/harness-edge/sdk"
)

// Defaults of Config.
const (
	DefaultManifestTimeout = 5 * time.Second
	DefaultRequestTimeout  = 30 * time.Second
	DefaultGoneTimeout     = 2 * time.Minute
)

// Config is the trusted configuration of one upstream. Zero durations take the defaults.
type Config struct {
	// UpstreamURL is the upstream server's base URL, e.g. "https://runtime.internal:4310" (a
	// path prefix is kept). Required.
	UpstreamURL string
	// UpstreamProvider is the upstream provider to serve. Empty: every provider the upstream
	// lists, each under its own id.
	UpstreamProvider string
	// ID is the local id of UpstreamProvider (default: the same id). Not allowed without
	// UpstreamProvider.
	ID string
	// BearerToken, when set, is sent as "Authorization: Bearer …" with every upstream request.
	BearerToken string
	// Headers are added to every upstream request (a gateway's API key, say).
	Headers map[string]string
	// CAFile is a PEM file of CA certificates trusted for the upstream's TLS certificate, in
	// addition to the system's.
	CAFile string
	// ManifestTimeout bounds the wait for the upstream's manifests when the provider starts;
	// after it the edge starts anyway and keeps trying in the background.
	ManifestTimeout time.Duration
	// RequestTimeout bounds each upstream call other than event streams (start, respond,
	// cancel, conversation, manifest), retries included.
	RequestTimeout time.Duration
	// GoneTimeout fails an execution whose upstream has not been heard from (no byte of a
	// stream, no answer below 500) for this long.
	GoneTimeout time.Duration
	// Retry is the SDK's retry policy for upstream calls and stream reconnects (zero fields:
	// the SDK's defaults).
	Retry sdk.RetryPolicy
}

// settings is a validated, defaulted copy of a Config.
type settings struct {
	base             string
	label            string // the upstream as local messages name it: its host
	upstreamProvider string
	id               string
	header           http.Header
	tls              *tls.Config // nil: Go's defaults
	manifestTimeout  time.Duration
	requestTimeout   time.Duration
	goneTimeout      time.Duration
	retry            sdk.RetryPolicy
}

func (c Config) settings() (*settings, error) {
	u, err := url.Parse(c.UpstreamURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("remote: upstream URL %q: want http(s)://host[:port][/prefix], without credentials", c.UpstreamURL)
	}
	if c.ID != "" && c.UpstreamProvider == "" {
		return nil, errors.New("remote: id renames one upstream provider; set upstream_provider too")
	}
	if strings.TrimSpace(c.UpstreamProvider) != c.UpstreamProvider || strings.TrimSpace(c.ID) != c.ID {
		return nil, errors.New("remote: provider ids must not start or end with spaces")
	}
	for _, d := range []time.Duration{c.ManifestTimeout, c.RequestTimeout, c.GoneTimeout} {
		if d < 0 {
			return nil, errors.New("remote: timeouts must not be negative")
		}
	}
	s := &settings{
		base:             strings.TrimSuffix(c.UpstreamURL, "/"),
		label:            u.Host,
		upstreamProvider: c.UpstreamProvider,
		id:               c.ID,
		header:           http.Header{},
		manifestTimeout:  durationOr(c.ManifestTimeout, DefaultManifestTimeout),
		requestTimeout:   durationOr(c.RequestTimeout, DefaultRequestTimeout),
		goneTimeout:      durationOr(c.GoneTimeout, DefaultGoneTimeout),
		retry:            c.Retry,
	}
	if s.id == "" {
		s.id = s.upstreamProvider
	}
	for name, value := range c.Headers {
		if name == "" || strings.ContainsAny(name+value, "\r\n") {
			return nil, fmt.Errorf("remote: header %q: names must be non-empty and values single-line", name)
		}
		s.header.Set(name, value)
	}
	if c.BearerToken != "" {
		if strings.ContainsAny(c.BearerToken, "\r\n") {
			return nil, errors.New("remote: the bearer token must be a single line")
		}
		s.header.Set("Authorization", "Bearer "+c.BearerToken)
	}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("remote: ca_file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("remote: ca_file %s holds no PEM certificate", c.CAFile)
		}
		s.tls = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return s, nil
}

func durationOr(d, fallback time.Duration) time.Duration {
	if d == 0 {
		return fallback
	}
	return d
}
