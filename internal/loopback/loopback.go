// Package loopback serves a real runtime over loopback HTTP for tests that drive it from the
// outside: the runtime on a bbolt file in a temporary directory, the mock provider first, served
// by the proxy, shut down by the test's cleanup. (Not under internal/testutil: the backend's own
// tests import that, and this imports the backend.)
package loopback

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

// Serve starts the server with wrap around its handler (nil for none; e.g. to count requests)
// and extra providers after the mock, and returns its base URL.
func Serve(t testing.TB, wrap func(http.Handler) http.Handler, extra ...backend.Provider) string {
	t.Helper()
	rt, err := local.Open(t.TempDir(), backend.Options{Providers: append([]backend.Provider{mock.New()}, extra...)})
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
