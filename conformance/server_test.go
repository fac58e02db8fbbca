package conformance_test

import (
	"net/http"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/internal/loopback"
)

// serve starts our server on loopback (internal/loopback) with wrap around the handler (nil for
// none) and extra providers after the mock. It returns the base URL.
func serve(t *testing.T, wrap func(http.Handler) http.Handler, extra ...backend.Provider) string {
	t.Helper()
	return loopback.Serve(t, wrap, extra...)
}
