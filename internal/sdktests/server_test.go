package sdk_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/proxy"
	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// testServer is the real server on loopback: the runtime on a bbolt file in a temporary
// directory with the mock provider, served by the proxy's HTTP binding.
type testServer struct {
	URL     string
	runtime *backend.Runtime
	handler *proxy.Handler
	http    *httptest.Server
	dir     string
	// created counts executions as the runtime creates them (an idempotent replay is not one).
	created *creationCounter
}

// creationCounter is the runtime's Observer; it counts created executions.
type creationCounter struct{ n atomic.Int64 }

func (c *creationCounter) ExecutionStarted(string)                      { c.n.Add(1) }
func (c *creationCounter) ExecutionFinished(string, api.ExecutionState) {}
func (c *creationCounter) EventsAppended(int)                           {}
func (c *creationCounter) StoreCommit(time.Duration)                    {}

// startServer serves a runtime whose store lives in dir, with the server's default heartbeat.
func startServer(dir string) (*testServer, error) {
	return startServerWithHeartbeat(dir, 0)
}

// startServerWithHeartbeat serves a runtime whose store lives in dir and writes a heartbeat on
// idle event streams every heartbeat (0: the server's default, 15 s).
func startServerWithHeartbeat(dir string, heartbeat time.Duration) (*testServer, error) {
	return startServerOn(dir, heartbeat, httptest.NewServer)
}

// startServerOn is startServerWithHeartbeat with the HTTP server serve starts around the
// handler (plain HTTP, TLS, a counting listener: see connreuse_test.go).
func startServerOn(dir string, heartbeat time.Duration, serve func(http.Handler) *httptest.Server) (*testServer, error) {
	counter := &creationCounter{}
	rt, err := local.Open(dir, backend.Options{Providers: []backend.Provider{mock.New()}, Observer: counter})
	if err != nil {
		return nil, err
	}
	// A tiny retry hint: the SDK's SSE client waits that long before it reconnects.
	h := proxy.New(rt, proxy.Options{RetryHint: time.Millisecond, Heartbeat: heartbeat})
	hs := serve(h)
	return &testServer{URL: hs.URL, runtime: rt, handler: h, http: hs, dir: dir, created: counter}, nil
}

// Close ends the streams, the HTTP server and the runtime, in that order.
func (s *testServer) Close() {
	s.handler.Shutdown()
	s.http.Close()
	_ = s.runtime.Close()
}

// newTestServer starts a server for t and stops it when t ends.
func newTestServer(t *testing.T) *testServer {
	t.Helper()
	s, err := startServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// newTestServerWithHeartbeat starts a server for t whose idle event streams carry a heartbeat
// every heartbeat, and stops it when t ends.
func newTestServerWithHeartbeat(t *testing.T, heartbeat time.Duration) *testServer {
	t.Helper()
	s, err := startServerWithHeartbeat(t.TempDir(), heartbeat)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// startExampleServer starts a server for an Example, which has no t; stop removes its files.
func startExampleServer() (url string, stop func()) {
	dir, err := os.MkdirTemp("", "harness-sdk-example-")
	if err != nil {
		panic(err)
	}
	s, err := startServer(dir)
	if err != nil {
		panic(err)
	}
	return s.URL, func() {
		s.Close()
		_ = os.RemoveAll(dir)
	}
}

// fastRetry keeps retry waits tiny so the suite stays fast.
var fastRetry = sdk.RetryPolicy{MaxAttempts: 5, MinWait: time.Millisecond, MaxWait: 4 * time.Millisecond, MaxRetryAfter: 2 * time.Millisecond}

func newClient(t *testing.T, url string, opts ...sdk.Option) *sdk.Client {
	t.Helper()
	c, err := sdk.New(url, append([]sdk.Option{sdk.WithRetry(fastRetry)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
