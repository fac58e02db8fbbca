package sdk

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// userAgent names the SDK to servers and gateways unless the caller sets its own.
const userAgent = "harness-edge-go-sdk/0.2.0"

// Client calls one Harness Runtime API server. It is safe for concurrent use; create one per
// server and reuse it.
type Client struct {
	api    *api.ClientWithResponses
	server string       // the base URL as the generated request builders want it
	http   *http.Client // retrying; used by the generated client and by event streams
	header http.Header
	retry  RetryPolicy
	log    *slog.Logger // never nil
	// quietAfter is how long an open event stream may bring no new event before the client
	// checks the replay for events it lost; reconnectTimeout bounds Events without progress
	// (0: no bound). See WithHeartbeatInterval and WithReconnectTimeout.
	quietAfter       time.Duration
	reconnectTimeout time.Duration
	// followHeartbeat: no WithHeartbeatInterval was given, so an event stream whose server
	// announces its heartbeat (heartbeat.go) is measured against that instead.
	followHeartbeat bool
}

// New returns a Client for the server at baseURL (for example "http://127.0.0.1:4310"; a path
// prefix such as "https://gw.example.com/harness" is kept).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("harness: base URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("harness: base URL %q: want http(s)://host[:port][/prefix]", baseURL)
	}
	s := settings{header: http.Header{}}
	for _, opt := range opts {
		opt(&s)
	}
	c := &Client{
		server: strings.TrimSuffix(baseURL, "/") + "/",
		header: s.header,
		retry:  s.retry.withDefaults(),
		log:    s.logger,
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.header.Get("User-Agent") == "" {
		c.header.Set("User-Agent", userAgent)
	}
	c.http = c.retryingHTTPClient(s.httpClient, s.logger, s)
	c.quietAfter, c.reconnectTimeout = s.quietAfter(), s.reconnectTimeout
	c.followHeartbeat = s.heartbeat == 0
	c.api, err = api.NewClientWithResponses(c.server,
		api.WithHTTPClient(c.http),
		api.WithRequestEditorFn(c.addHeaders))
	if err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	return c, nil
}

// retryingHTTPClient builds the client's stack (see transport.go): go-retryablehttp over the
// caller's HTTP client, whose transport runs under a watchdog.
func (c *Client) retryingHTTPClient(base *http.Client, logger *slog.Logger, s settings) *http.Client {
	rc := retryablehttp.NewClient() // its HTTPClient defaults to a pooled client without timeouts
	if base != nil {
		rc.HTTPClient = base
	}
	watched := *rc.HTTPClient // a copy: the caller's client is theirs
	next := watched.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	watched.Transport = &watchdogTransport{next: next, answerTimeout: s.stallTimeout(), streamTimeout: s.deadStreamAfter(), followHeartbeat: s.heartbeat == 0}
	rc.HTTPClient = &watched
	// retryablehttp logs every attempt to stderr unless told otherwise; *slog.Logger already
	// has the LeveledLogger method set.
	rc.Logger = nil
	if logger != nil {
		rc.Logger = logger
	}
	rc.RetryMax = c.retry.MaxAttempts - 1
	rc.RetryWaitMin, rc.RetryWaitMax = c.retry.MinWait, c.retry.MaxWait
	rc.CheckRetry = checkRetry
	rc.Backoff = c.retry.retryablehttpBackoff
	rc.PrepareRetry = countRetry
	// Give the last response to the generated client, so a final 503 or 429 is decoded into an
	// *Error like any other answer instead of "giving up after N attempts".
	rc.ErrorHandler = retryablehttp.PassthroughErrorHandler
	return &http.Client{Transport: &retryingTransport{client: rc}}
}

// addHeaders is the request editor that adds the configured headers and ctx's trace context
// (tracing.go) to every request.
func (c *Client) addHeaders(ctx context.Context, req *http.Request) error {
	for name, values := range c.header {
		req.Header[name] = append([]string(nil), values...)
	}
	injectTraceContext(ctx, req.Header)
	return nil
}

// result returns the decoded success body, or the *Error for any other answer.
func result[T any](r *http.Response, body []byte, success *T) (T, error) {
	var zero T
	if success != nil {
		return *success, nil
	}
	if r != nil && r.StatusCode >= 200 && r.StatusCode < 300 {
		return zero, fmt.Errorf("harness: unexpected answer %s with Content-Type %q", r.Status, r.Header.Get("Content-Type"))
	}
	return zero, errorFromResponse(r, body)
}

// transportError wraps an error that left no HTTP answer to decode (the connection failed
// after all retries, the context ended, a body did not decode).
func transportError(operation string, err error) error {
	return fmt.Errorf("harness: %s: %w", operation, err)
}
