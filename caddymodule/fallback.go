package caddymodule

import (
	"net/http"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/harness-edge/harness-edge/proxy"
)

// serveOutsideProtocol hands a request for a path outside the protocol to the rest of the
// route, and answers the JSON 404 Problem when nothing there answered it.
//
// Caddy ends every route with a handler that writes nothing, which the client sees as an
// empty 200: with `harness` alone in a site, `GET /` or `GET /openapi.yaml` looked like a
// success. Caddy gives a handler no way to ask whether it is the last one of its route, so
// the handler watches instead: if the handlers after it return without an error and without
// writing a status, the request was not handled, and a 404 Problem says so. A site that
// shares `harness` with other handlers is unchanged: `file_server`, `respond`,
// `reverse_proxy` and the like write their answer (or return an error that Caddy's error
// handling answers), and harness stays out of the way.
func serveOutsideProtocol(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	// Without a buffer decision the recorder streams straight to w and only remembers the
	// status; it keeps Flush, Hijack and ReadFrom working for the handlers after us.
	rec := caddyhttp.NewResponseRecorder(w, nil, nil)
	if err := next.ServeHTTP(rec, r); err != nil {
		return err
	}
	if rec.Status() == 0 {
		proxy.NotFound(w, r)
	}
	return nil
}
