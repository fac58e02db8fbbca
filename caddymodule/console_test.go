package caddymodule

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"

	"github.com/harness-edge/harness-edge/console"
)

// TestConsoleSetting: `console` alone serves at /console/, a prefix is normalised to end in "/",
// and the JSON key is "console"; the console is off when the setting is absent
// (TestAdaptBareDirective).
func TestConsoleSetting(t *testing.T) {
	for body, want := range map[string]string{
		"harness {\n console\n}":      `"console":"/console/"`,
		"harness {\n console /ui\n}":  `"console":"/ui/"`,
		"harness {\n console /ui/\n}": `"console":"/ui/"`,
	} {
		cfg, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(":4310 {\n"+body+"\n}\n"), nil)
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		if !strings.Contains(string(cfg), want) {
			t.Errorf("%q adapted to %s, want %s in it", body, cfg, want)
		}
	}
	_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(":4310 {\nharness {\n console /a /b\n}\n}\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "wrong argument count") {
		t.Errorf("console with two prefixes: %v", err)
	}
}

// TestConsolePrefixIsChecked: a prefix from JSON that is not an absolute directory path, or that
// the API's own paths would shadow, is refused when the config loads.
func TestConsolePrefixIsChecked(t *testing.T) {
	for prefix, want := range map[string]string{
		"console/":   `must be a path that starts and ends with "/"`,
		"/console":   `must be a path that starts and ends with "/"`,
		"/v1/":       "overlaps the API's paths",
		"/v1/ui/":    "overlaps the API's paths",
		"/healthz/":  "overlaps the API's paths",
		"/console/":  "",
		"/":          "",
		"/ops/cons/": "",
	} {
		err := (&Harness{Console: prefix}).Validate()
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("console %q: %v, want %q", prefix, err, want)
		}
	}
}

// TestConsoleServedByTheModule loads a real config into Caddy: the console answers under its
// prefix with the CSP, the API and the rest of the site are unchanged, and a site without the
// setting passes /console/ on to its next handler.
func TestConsoleServedByTheModule(t *testing.T) {
	loadCaddyfile(t, fmt.Sprintf(`
http://localhost:9080 {
	harness {
		data_dir %s
		provider mock
		console /ops/
	}
	respond "next handler" 200
}
`, t.TempDir()))

	get := func(path string) (*http.Response, string) {
		t.Helper()
		res, err := http.Get(httpURL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res, string(body)
	}

	res, body := get("/ops/")
	if res.StatusCode != http.StatusOK || !strings.Contains(body, `<script type="module" src="app.js">`) {
		t.Fatalf("GET /ops/: %d\n%s", res.StatusCode, body)
	}
	if got := res.Header.Get("Content-Security-Policy"); got != console.ContentSecurityPolicy {
		t.Fatalf("CSP %q", got)
	}
	if res, _ := get("/ops/app.js"); res.Header.Get("Content-Type") != "text/javascript; charset=utf-8" {
		t.Fatalf("app.js Content-Type %q", res.Header.Get("Content-Type"))
	}
	if res, body := get("/v1/runtime"); res.StatusCode != http.StatusOK || !strings.Contains(body, `"providers"`) {
		t.Fatalf("GET /v1/runtime beside the console: %d %s", res.StatusCode, body)
	}
	if _, body := get("/console/"); body != "next handler" {
		t.Fatalf("GET /console/ when the console is at /ops/: %q", body)
	}

	loadCaddyfile(t, fmt.Sprintf(`
http://localhost:9080 {
	harness {
		data_dir %s
		provider mock
	}
	respond "next handler" 200
}
`, t.TempDir()))
	if res, body := get("/ops/"); body != "next handler" || res.Header.Get("Content-Security-Policy") != "" {
		t.Fatalf("GET /ops/ without the console setting: %q", body)
	}
}

// TestConsoleIsAnnounced: with the console on, start-up logs its URL beside the API's, so the
// output of `make run` holds a link to open; with it off, nothing is said.
func TestConsoleIsAnnounced(t *testing.T) {
	var logged strings.Builder
	h := &Harness{Console: "/console/", logger: slog.New(slog.NewTextHandler(&logged, nil))}
	announceConsole(h, "http://127.0.0.1:4310")
	if !strings.Contains(logged.String(), `msg="Harness web console on http://127.0.0.1:4310/console/"`) {
		t.Fatalf("logged %q", logged.String())
	}
	logged.Reset()
	h.Console = ""
	announceConsole(h, "http://127.0.0.1:4310")
	if logged.Len() != 0 {
		t.Fatalf("logged %q with the console off", logged.String())
	}
}
