package caddymodule

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/harness-edge/harness-edge/console"
	"github.com/harness-edge/harness-edge/proxy"
)

// defaultConsolePrefix is where `console` without an argument serves the web console.
const defaultConsolePrefix = "/console/"

// parseConsole reads `console [<path prefix>]`. The prefix is normalised to end with "/", so
// `console /ui` and `console /ui/` mean the same.
func (h *Harness) parseConsole(d *caddyfile.Dispenser) error {
	prefix := defaultConsolePrefix
	if d.NextArg() {
		prefix = d.Val()
		if !strings.HasSuffix(prefix, "/") {
			prefix += "/"
		}
	}
	if d.NextArg() {
		return d.ArgErr()
	}
	h.Console = prefix
	return nil
}

// checkConsole rejects a console prefix that is not an absolute path ending in "/", or that lies
// inside the protocol's own paths (the API would shadow it).
func (h *Harness) checkConsole() error {
	prefix := h.Console
	switch {
	case prefix == "":
		return nil
	case !strings.HasPrefix(prefix, "/") || !strings.HasSuffix(prefix, "/"):
		return fmt.Errorf("console must be a path that starts and ends with \"/\", got %q", prefix)
	case proxy.Handles(strings.TrimSuffix(prefix, "/")) || proxy.Handles(prefix):
		return fmt.Errorf("console %q overlaps the API's paths (/v1, /healthz)", prefix)
	}
	return nil
}

// serveConsole answers requests for the console's paths when the console is on, and reports
// whether it did. The console is built on the first request: its handler is cheap and holds no
// state beyond the embedded files.
func (h *Harness) serveConsole(w http.ResponseWriter, r *http.Request) bool {
	if h.Console == "" || !console.Handles(h.Console, r.URL.Path) {
		return false
	}
	h.consoleOnce.Do(func() { h.consoleHandler = console.Handler(h.Console) })
	h.consoleHandler.ServeHTTP(w, r)
	return true
}

// announceConsole logs where the console is, beside the line that says where the API listens,
// so that `make run` shows a link a person can open.
func announceConsole(h *Harness, baseURL string) {
	if h.Console == "" {
		return
	}
	url := baseURL + h.Console
	h.logger.Info("Harness web console on "+url, slog.String("url", url))
}
