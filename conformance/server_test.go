package conformance_test

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

// serve starts our server on loopback — the runtime on a bbolt file in a temporary directory,
// served by the proxy — with wrap around the handler (nil for none) and extra providers after
// the mock. It returns the base URL.
func serve(t *testing.T, wrap func(http.Handler) http.Handler, extra ...backend.Provider) string {
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
	hs := httptest.NewServer(handler)
	t.Cleanup(func() {
		h.Shutdown()
		hs.Close()
		_ = rt.Close()
	})
	return hs.URL
}
