package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/proxy"
)

// serveRuntime serves a real runtime (bbolt in a temporary directory, the mock provider) over
// loopback HTTP for a phase to run against, and returns its base URL; the test's cleanup shuts
// it down. wrap, when not nil, stands between the client and the handler (to count requests).
func serveRuntime(t *testing.T, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	rt, err := local.Open(t.TempDir(), backend.Options{Providers: []backend.Provider{mock.New()}})
	if err != nil {
		t.Fatal(err)
	}
	h := proxy.New(rt, proxy.Options{RetryHint: time.Millisecond})
	var handler http.Handler = h
	if wrap != nil {
		handler = wrap(h)
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(func() {
		h.Shutdown()
		srv.Close()
		_ = rt.Close()
	})
	return srv.URL
}
