package caddymodule

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/proxy"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Serving a request: the protocol handler over the runtime once provisioning has one
// (newProtocolHandler, caddy.go), and the Problem answer while it has none.

// ServeHTTP answers the protocol's paths and passes every other request to next; when
// nothing after it answers, the request gets a 404 Problem (fallback.go).
func (h *Harness) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if !proxy.Handles(r.URL.Path) {
		if h.serveConsole(w, r) {
			return nil
		}
		return serveOutsideProtocol(w, r, next)
	}
	handler, err := h.protocolHandler()
	if err != nil {
		h.logger.ErrorContext(r.Context(), "harness runtime unavailable", slog.String("store", h.storeKey), slog.Any("error", err))
		writeUnavailable(w, isStoreLocked(err))
		return nil
	}
	r, endSpan := traceRequest(h.tracer, r)
	defer endSpan()
	handler.ServeHTTP(w, r)
	return nil
}

// protocolHandler returns the proxy handler. Provision creates it when the store's runtime is
// open already (a reload); otherwise the first request creates it, opening the runtime if the
// harness app has not (a request can come before every app of the config started, and a store
// another process held at the start is opened then, see sharedRuntime.start).
func (h *Harness) protocolHandler() (*proxy.Handler, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.handler != nil {
		return h.handler, nil
	}
	if h.shared == nil {
		return nil, errors.New("the handler is not provisioned")
	}
	rt, err := h.shared.runtime()
	if err != nil {
		return nil, err
	}
	h.handler = h.newProtocolHandler(rt)
	if h.stopped {
		// A request raced the "stopping" event: serve it, but end its stream at once.
		h.handler.Shutdown()
	}
	return h.handler, nil
}

// writeUnavailable answers 503 with the protocol's Problem envelope, so clients see the same
// error shape as for every other failure. The cause is logged, not sent: it names server paths.
func writeUnavailable(w http.ResponseWriter, locked bool) {
	message := "Runtime unavailable"
	if locked {
		message += ": its store is in use by another process"
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusServiceUnavailable)
	_ = json.NewEncoder(w).Encode(api.Problem{Code: string(backend.CodeInternal), Message: message})
}
