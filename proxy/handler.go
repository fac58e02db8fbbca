// Package proxy is the HTTP binding of the Harness Runtime API: a plain http.Handler over a
// backend.Runtime. It routes the protocol's eleven operations (including the custom methods
// `{id}:cancel` and `{actionId}:respond`) and the extensions (listing, the OpenAPI document),
// decodes and validates requests exactly as the reference does, maps runtime errors to Problem
// envelopes, and serves events as a JSON replay or a server-sent event stream.
//
// Where harness-edge differs from the reference on purpose (JSON 404 for unknown routes, 405
// with Allow, 413, strict cursors, Last-Event-ID, SSE heartbeats) the rules are in
// docs/design.md ("Decisions").
package proxy

import (
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/internal/logburst"
)

// Options configure a Handler. The zero value gives the documented defaults.
type Options struct {
	// MaxBodyBytes bounds a request body; larger bodies answer 413 VALIDATION_ERROR.
	// Default 1 MiB.
	MaxBodyBytes int64
	// Heartbeat is the interval of the SSE comment `: keep-alive` on an idle stream, so that
	// proxies and load balancers do not drop a stream that waits for an approval. Default 15s.
	Heartbeat time.Duration
	// RetryHint is the `retry:` field of the first event of a stream: how long an SSE client
	// waits before it reconnects. Default 250ms, short on purpose: the clients that follow it
	// are EventSource ones (browsers), which wait this long after every drop and mostly add
	// no backoff or jitter of their own. The drops a server causes (reload, shutdown, a write
	// timeout) are clean, the server is back at once and the client resumes from its cursor,
	// so a longer wait is only latency, and it spreads no herd either (every client waits the
	// same). 250 ms is hardly noticed, and bounds a browser that a broken proxy keeps cutting
	// to four requests a second. The Go SDK has its own jittered backoff and ignores the hint.
	RetryHint time.Duration
	// StreamWriteTimeout bounds each write of an SSE stream: a client that stops reading for
	// this long is dropped instead of holding its stream (and Shutdown) forever. Default 30s.
	StreamWriteTimeout time.Duration
	// MaxPageSize caps `?limit` of the JSON replay, and is the page size when no limit is
	// given. 0 keeps the reference's behaviour: no limit unless the client asks for one.
	MaxPageSize int
	// AllowedOrigins are the browser origins (scheme://host[:port]) besides the API's own from
	// which requests are served; a request whose Origin header names any other answers 403
	// ORIGIN_NOT_ALLOWED. Requests without Origin are always served. See origin.go; listed
	// origins get CORS headers and preflight answers (cors.go).
	AllowedOrigins []string
	// MaxRequiredCapabilities bounds the length of requiredCapabilities in a start request.
	// Default 64.
	MaxRequiredCapabilities int
	// Logger receives unexpected errors (never request bodies). nil discards.
	Logger *slog.Logger
	// Observer, if set, is told when an SSE stream opens and closes (for an open-streams gauge).
	Observer StreamObserver
	// Tenant, when set, names the caller's tenant of each request (see tenant.go): every
	// conversation and execution belongs to the tenant that created it, and other tenants get
	// what an unknown id gets. A request whose tenant is empty is refused with 401
	// UNAUTHENTICATED. nil: tenancy off, every caller is the one anonymous tenant.
	Tenant func(*http.Request) string
	// Actor, when set, names the authenticated identity behind each request (see actor.go):
	// the events a cancel or an action response causes record it as `actor`. An empty result
	// records nothing. nil: no identities are recorded.
	Actor func(*http.Request) string
	// DetachIdleStreams lets idle HTTP/1.1 event streams leave net/http (events_detach.go):
	// about 10 KiB per idle stream instead of 35. Only for a handler whose response writers
	// pass the body through unchanged and that nothing ends through the request's context:
	// a detached stream writes to the connection itself, so a middleware in front that
	// rewrites or cuts the body (other than one that sets Content-Encoding, which is detected)
	// no longer sees it. The Caddy module sets it; off by default.
	DetachIdleStreams bool
	// MaxRunning bounds how many executions each tenant may have non-terminal at once; a start
	// beyond it answers 429 RATE_LIMITED with Retry-After. Without Tenant it bounds the
	// anonymous tenant, that is every caller together. 0: no bound.
	MaxRunning int
	// TenantMaxRunning overrides MaxRunning for the tenants it names (a budget's max_running,
	// docs/usage.md).
	TenantMaxRunning map[string]int
}

// StreamObserver is told about SSE streams. Calls come from request goroutines, concurrently.
type StreamObserver interface {
	StreamOpened()
	StreamClosed()
}

const (
	defaultMaxBodyBytes            = 1 << 20
	defaultHeartbeat               = 15 * time.Second
	defaultRetryHint               = 250 * time.Millisecond // why: see Options.RetryHint
	defaultStreamWriteTimeout      = 30 * time.Second
	defaultMaxRequiredCapabilities = 64
)

// Handler serves the protocol. Create it with New; it is safe for concurrent use.
type Handler struct {
	rt      *backend.Runtime
	opts    Options
	log     *slog.Logger
	origins originPolicy

	// shutdown is closed by Shutdown; every stream selects on it.
	shutdown     chan struct{}
	shutdownOnce sync.Once
	// streams are the open SSE streams, whose blocked writes Shutdown interrupts.
	streams streamRegistry
	// failures logs unexpected request failures, a burst of identical ones as one line and a
	// count (logFailure).
	failures *logburst.Logger
	// heartbeatMs is the value of heartbeatHeader ("" when the interval is under 1 ms).
	heartbeatMs string
	// frames are the conversation and tenant streams' shared frames (streams_frames.go).
	frames sharedFrames
}

// requestErrorLogWindow is how often a burst of identical request failures is summarised: as
// often as the runtime summarises the store errors behind them.
const requestErrorLogWindow = 10 * time.Second

// New returns a Handler serving rt.
func New(rt *backend.Runtime, opts Options) *Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = defaultMaxBodyBytes
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = defaultHeartbeat
	}
	if opts.RetryHint <= 0 {
		opts.RetryHint = defaultRetryHint
	}
	if opts.StreamWriteTimeout <= 0 {
		opts.StreamWriteTimeout = defaultStreamWriteTimeout
	}
	if opts.MaxRequiredCapabilities <= 0 {
		opts.MaxRequiredCapabilities = defaultMaxRequiredCapabilities
	}
	if opts.MaxPageSize < 0 {
		opts.MaxPageSize = 0
	}
	if opts.MaxRunning < 0 {
		opts.MaxRunning = 0
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	h := &Handler{rt: rt, opts: opts, log: log, origins: newOriginPolicy(opts.AllowedOrigins), shutdown: make(chan struct{}),
		failures: logburst.New(log, requestErrorLogWindow)}
	if ms := opts.Heartbeat.Milliseconds(); ms > 0 {
		h.heartbeatMs = strconv.FormatInt(ms, 10)
	}
	return h
}

// Shutdown ends every open SSE stream cleanly (clients resume by cursor) and makes streams
// opened afterwards end as soon as their backlog is written. A stream whose client does not read
// ends at once too: its blocked write is interrupted (shutdown.go). JSON operations are
// unaffected. The Caddy module calls it on reload and stop, because Caddy waits for open
// requests until its grace period ends (forever by default). Safe to call more than once and
// concurrently; it does not wait for the streams to end.
func (h *Handler) Shutdown() {
	h.shutdownOnce.Do(func() {
		close(h.shutdown)
		// The failures counted so far are reported now, not a window after the handler was
		// replaced; later ones (requests still finishing) start bursts of their own.
		h.failures.Flush()
		// After the close: a write that starts from now on sees it and arms its own short
		// deadline, so only the writes already in flight need interrupting.
		go h.streams.interrupt(h.streams.writesInFlight())
	})
}

// WaitDetached waits, at most timeout, until every detached stream has ended, and reports
// whether they all did. Detached streams (idle HTTP/1 streams that left net/http, see
// events_detach.go) are not requests any more, so a server's graceful shutdown does not wait for
// them: call it after Shutdown, before closing the runtime. Once Shutdown was called, each ends
// within about shutdownWriteTimeout (1 s), even when its client does not read.
func (h *Handler) WaitDetached(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for h.streams.detachedCount() > 0 {
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

func (h *Handler) shuttingDown() bool {
	select {
	case <-h.shutdown:
		return true
	default:
		return false
	}
}

// ServeHTTP routes the request and answers it. A panic in an operation becomes a 500
// INTERNAL_ERROR Problem (if nothing was written yet) instead of a dropped connection.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tw := &trackingWriter{ResponseWriter: w}
	defer func() {
		rec := recover()
		if rec == nil {
			return
		}
		if rec == http.ErrAbortHandler { //nolint:errorlint // net/http compares it the same way
			panic(rec)
		}
		h.log.Error("harness: panic serving request",
			"method", r.Method, "path", r.URL.EscapedPath(), "panic", rec, "stack", string(debug.Stack()))
		if tw.wroteHeader {
			// The status is on the wire: abort the connection so the client sees a truncated
			// response rather than a well-formed one that silently lacks its end.
			panic(http.ErrAbortHandler)
		}
		writeProblem(tw, internalProblem())
	}()
	if origin := h.origins.refuses(r); origin != "" {
		originNotAllowed(tw, origin)
		return
	}
	// Before tenancy: a browser sends a preflight without credentials, so it has no tenant.
	if h.origins.applyCORS(tw, r) {
		return
	}
	r, ok := h.withTenant(tw, r)
	if !ok {
		return
	}
	r = h.withActor(r)
	h.route(tw, r)
}

// trackingWriter remembers whether the response has started, so the panic handler knows
// whether a Problem can still be written. Unwrap keeps http.ResponseController and go-sse able
// to reach the underlying writer's Flush (Caddy wraps it too).
type trackingWriter struct {
	http.ResponseWriter
	wroteHeader bool
}

func (t *trackingWriter) WriteHeader(code int) {
	t.wroteHeader = true
	t.ResponseWriter.WriteHeader(code)
}

func (t *trackingWriter) Write(p []byte) (int, error) {
	t.wroteHeader = true
	return t.ResponseWriter.Write(p)
}

func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }
