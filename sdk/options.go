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
	// heartbeat, stall: 0 takes the default, < 0 turns off.
	heartbeat        time.Duration
	stall            time.Duration
	reconnectTimeout time.Duration
}

const (
	// DefaultHeartbeatInterval is the server's default heartbeat interval: harness-edge
	// writes ": keep-alive" on an idle event stream every 15 s unless configured otherwise.
	DefaultHeartbeatInterval = 15 * time.Second
	// DeadStreamHeartbeats is how many heartbeat intervals an event stream may stay silent
	// (no event, no heartbeat) before the client presumes it dead and reconnects. The server
	// re-arms its heartbeat after every event, so a healthy stream is never silent much longer
	// than one interval; three leave room for two late heartbeats (a busy server, a
	// buffering proxy) without waiting minutes on a dead connection.
	DeadStreamHeartbeats = 3
	// DefaultStallTimeout is how long a call's answer may stay silent before the try is
	// abandoned and retried. The server answers every call at once except CancelExecution,
	// which waits for the provider's cleanup (at most 30 s by default); 60 s leaves twice that.
	DefaultStallTimeout = 60 * time.Second
	// quietCheckMaxIntervals caps the back-off of the checks of a quiet stream (see
	// WithHeartbeatInterval): at most one replay request per 8 heartbeat intervals on a
	// stream that stays quiet.
	quietCheckMaxIntervals = 8
)

// heartbeatInterval is the interval the client counts on, or < 0 for none.
func (s settings) heartbeatInterval() time.Duration {
	if s.heartbeat == 0 {
		return DefaultHeartbeatInterval
	}
	return s.heartbeat
}

// quietAfter is the first wait of the quiet checks: one heartbeat interval.
func (s settings) quietAfter() time.Duration {
	if h := s.heartbeatInterval(); h > 0 {
		return h
	}
	return DefaultHeartbeatInterval
}

// deadStreamAfter is the silence after which an event stream is presumed dead; 0: never.
func (s settings) deadStreamAfter() time.Duration {
	if h := s.heartbeatInterval(); h > 0 {
		return DeadStreamHeartbeats * h
	}
	return 0
}

// stallTimeout is the silence after which a try of a call is abandoned; 0: never.
func (s settings) stallTimeout() time.Duration {
	switch {
	case s.stall == 0:
		return DefaultStallTimeout
	case s.stall < 0:
		return 0
	}
	return s.stall
}

// RetryPolicy bounds the retries of one call. Zero fields take the defaults below; the context
// of the call bounds everything, waits included. Event streams reconnect with the same
// backoff, except that the reconnect after a healthy stream (one that brought events or stayed
// open for a heartbeat interval) waits only min(100ms, MinWait), less up to half at random.
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

// WithHeartbeatInterval tells the client how often the server writes a heartbeat on an idle
// event stream, overriding what the server says. Without it the client follows the interval a
// harness-edge server announces on each stream (the Harness-Heartbeat-Ms header), and counts
// on DefaultHeartbeatInterval (15 s, the harness-edge default) with a server that announces
// none (the reference implementation). Events, Run and WaitForTerminal derive two things from
// the interval:
//
//   - Dead streams. A stream that brings no byte at all, neither event nor heartbeat, for
//     DeadStreamHeartbeats intervals (45 s by default) is presumed dead (a NAT or load
//     balancer dropped it silently, a half-open TCP connection): the client drops it and
//     reconnects from the last event it delivered. The clock only runs while the client
//     waits for bytes, not while your loop body holds an event.
//   - Silent gaps. A stream that stays open but brings no new event for one interval
//     (heartbeats only) makes the client ask the JSON replay for events after the last one
//     it delivered, and deliver what the stream lost, in order, exactly once. While the
//     stream stays quiet the checks back off: 1, 2, 4, then every 8 intervals.
//
// A server that sends no heartbeats (the reference implementation) sees an idle stream
// reconnected every three intervals, which costs a request and loses nothing. d < 0 turns
// dead-stream detection off (a silent stream is then waited on until ctx ends) and keeps the
// quiet checks at the default interval.
func WithHeartbeatInterval(d time.Duration) Option {
	return func(s *settings) { s.heartbeat = d }
}

// WithStallTimeout bounds how long the answer to one try of a call (not an event stream, see
// WithHeartbeatInterval) may stay silent: no header, or no further byte of the body, for d.
// The try is then abandoned as a dead connection and retried under the retry policy, except
// by CreateConversation, for which the server may have acted. Default DefaultStallTimeout
// (60 s); d < 0 turns it off (the call then waits until ctx ends). Only silence counts: an
// answer that keeps arriving, however slowly, is never cut.
func WithStallTimeout(d time.Duration) Option {
	return func(s *settings) { s.stall = d }
}

// WithReconnectTimeout bounds how long Events (and Run and WaitForTerminal) go on without
// progress before giving up: when for d no event was delivered and no byte (event or
// heartbeat) arrived on an open stream, so that the client has only been reconnecting, the
// iterator ends with an error that wraps ErrNoProgress. Time spent in your loop body does
// not count. Without it (d <= 0, the default) Events reconnects for as long as ctx lives,
// like a browser's EventSource.
func WithReconnectTimeout(d time.Duration) Option {
	return func(s *settings) { s.reconnectTimeout = d }
}
