package sdk

import (
	"log/slog"
	"net/http"
	"time"
)

// An Option configures a Client in New.
type Option func(*settings)

// settings is what the options build; New turns it into a Client.
type settings struct {
	httpClient *http.Client
	header     http.Header
	retry      RetryPolicy
	logger     *slog.Logger
}

// RetryPolicy bounds the retries of one call. Zero fields take the defaults below; the context
// of the call bounds everything, waits included.
type RetryPolicy struct {
	// MaxAttempts is the number of tries of one request, the first included. 1 disables
	// retries. Default 4.
	MaxAttempts int
	// MinWait and MaxWait bound the jittered exponential backoff between tries: the n-th retry
	// waits about MinWait·2^n (minus up to a quarter, at random), at most MaxWait.
	// Defaults 500ms and 8s.
	MinWait time.Duration
	MaxWait time.Duration
	// MaxRetryAfter caps a server's Retry-After (429, 503): the client waits what the server
	// asks, but never longer than this. Default 30s.
	MaxRetryAfter time.Duration
}

// DefaultRetryPolicy is what a Client uses without WithRetry.
var DefaultRetryPolicy = RetryPolicy{
	MaxAttempts:   4,
	MinWait:       500 * time.Millisecond,
	MaxWait:       8 * time.Second,
	MaxRetryAfter: 30 * time.Second,
}

// withDefaults fills the zero fields of p from DefaultRetryPolicy.
func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultRetryPolicy.MaxAttempts
	}
	if p.MinWait <= 0 {
		p.MinWait = DefaultRetryPolicy.MinWait
	}
	if p.MaxWait <= 0 {
		p.MaxWait = DefaultRetryPolicy.MaxWait
	}
	if p.MaxWait < p.MinWait {
		p.MaxWait = p.MinWait
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = DefaultRetryPolicy.MaxRetryAfter
	}
	return p
}

// WithHTTPClient sends every request through hc (its Transport, TLS settings, proxies). The
// retries wrap it. Leave hc.Timeout at zero: it would also cut event streams; bound calls with
// their context instead.
func WithHTTPClient(hc *http.Client) Option {
	return func(s *settings) { s.httpClient = hc }
}

// WithHeader adds a header to every request (for example a gateway's API key). It may be given
// more than once; values of the same name accumulate.
func WithHeader(name, value string) Option {
	return func(s *settings) { s.header.Add(name, value) }
}

// WithBearerToken sends "Authorization: Bearer <token>" with every request. The SDK stores the
// token only to send it.
func WithBearerToken(token string) Option {
	return func(s *settings) { s.header.Set("Authorization", "Bearer "+token) }
}

// WithRetry replaces the retry policy (see RetryPolicy for the defaults of zero fields).
func WithRetry(p RetryPolicy) Option {
	return func(s *settings) { s.retry = p }
}

// WithLogger makes the client log its retries and reconnects to l at debug level and its
// failed attempts at error level. Without it the client is silent.
func WithLogger(l *slog.Logger) Option {
	return func(s *settings) { s.logger = l }
}
