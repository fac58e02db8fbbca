package console_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/console"
)

// TestAssetsAreServedWithTheirTypesAndTheCSP fetches every page and module of the console over
// real HTTP: each carries the strict CSP, nosniff and its exact content type (a browser refuses an
// ES module served as anything but JavaScript, and nosniff makes it refuse a wrong CSS type too).
func TestAssetsAreServedWithTheirTypesAndTheCSP(t *testing.T) {
	srv := httptest.NewServer(console.Handler("/console/"))
	defer srv.Close()

	cases := map[string]string{
		"/console/":             "text/html; charset=utf-8",
		"/console/console.css":  "text/css; charset=utf-8",
		"/console/app.js":       "text/javascript; charset=utf-8",
		"/console/api.js":       "text/javascript; charset=utf-8",
		"/console/dom.js":       "text/javascript; charset=utf-8",
		"/console/list.js":      "text/javascript; charset=utf-8",
		"/console/execution.js": "text/javascript; charset=utf-8",
		"/console/start.js":     "text/javascript; charset=utf-8",
		"/console/timeline.js":  "text/javascript; charset=utf-8",
		"/console/overview.js":  "text/javascript; charset=utf-8",
		"/console/inbox.js":     "text/javascript; charset=utf-8",
		"/console/rules.js":     "text/javascript; charset=utf-8",
		"/console/favicon.svg":  "image/svg+xml",

		"/console/conversation.js":            "text/javascript; charset=utf-8",
		"/console/composer.js":                "text/javascript; charset=utf-8",
		"/console/conversations.js":           "text/javascript; charset=utf-8",
		"/console/manage.js":                  "text/javascript; charset=utf-8",
		"/console/action.js":                  "text/javascript; charset=utf-8",
		"/console/vendor/uplot/uPlot.esm.js":  "text/javascript; charset=utf-8",
		"/console/vendor/uplot/uPlot.min.css": "text/css; charset=utf-8",
		"/console/vendor/uplot/LICENSE.txt":   "text/plain; charset=utf-8",
		"/console/vendor/uplot/README.txt":    "text/plain; charset=utf-8",
	}
	for path, wantType := range cases {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: status %d", path, res.StatusCode)
		}
		if got := res.Header.Get("Content-Type"); got != wantType {
			t.Errorf("GET %s: Content-Type %q, want %q", path, got, wantType)
		}
		if got := res.Header.Get("Content-Security-Policy"); got != console.ContentSecurityPolicy {
			t.Errorf("GET %s: Content-Security-Policy %q", path, got)
		}
		if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options %q", path, got)
		}
		if len(body) == 0 {
			t.Errorf("GET %s: empty body", path)
		}
	}
}

// TestCSPIsStrict pins the policy's directives: nothing inline, nothing from another origin, no
// framing.
func TestCSPIsStrict(t *testing.T) {
	want := "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
		"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
	if console.ContentSecurityPolicy != want {
		t.Fatalf("CSP %q, want %q", console.ContentSecurityPolicy, want)
	}
	if strings.Contains(console.ContentSecurityPolicy, "unsafe") {
		t.Fatal("the CSP allows unsafe-inline or unsafe-eval")
	}
}

// TestPagesHoldNoInlineCode reads the HTML as served: every script is an external module and no
// element carries an inline style or event handler, which the CSP would refuse in a browser.
func TestPagesHoldNoInlineCode(t *testing.T) {
	srv := httptest.NewServer(console.Handler("/console/"))
	defer srv.Close()
	res, err := http.Get(srv.URL + "/console/")
	if err != nil {
		t.Fatal(err)
	}
	html, _ := io.ReadAll(res.Body)
	res.Body.Close()
	page := strings.ToLower(string(html))
	for _, forbidden := range []string{"<style", " style=", " onclick=", " onload=", "javascript:"} {
		if strings.Contains(page, forbidden) {
			t.Errorf("index.html contains %q", forbidden)
		}
	}
	if strings.Count(page, "<script") != strings.Count(page, `<script type="module" src=`) {
		t.Errorf("index.html has a script that is not an external module:\n%s", html)
	}
}

// TestEveryEmbeddedFileHasAKnownType keeps a new asset from being served with a guessed type.
func TestEveryEmbeddedFileHasAKnownType(t *testing.T) {
	err := fs.WalkDir(console.Files(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if console.ContentType(path) == "" {
			t.Errorf("%s has no content type in the console's table", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRedirectsAndMethods: the bare prefix redirects to the slash form (relative module URLs need
// it), a write method is refused with 405 and Allow, an unknown file is 404 as plain text.
func TestRedirectsAndMethods(t *testing.T) {
	h := console.Handler("/ui/")

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ui?x=1", nil))
	if rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "/ui/?x=1" {
		t.Errorf("GET /ui: %d Location %q", rec.Code, rec.Header().Get("Location"))
	}

	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/ui/", nil))
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /ui/: %d Allow %q", rec.Code, rec.Header().Get("Allow"))
	}

	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ui/missing.js", nil))
	if rec.Code != http.StatusNotFound || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
		t.Errorf("GET /ui/missing.js: %d Content-Type %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	if rec.Header().Get("Content-Security-Policy") == "" {
		t.Error("an error answer lacks the CSP")
	}
}

// TestRevalidationAnswers304: the console is served with no-cache (an upgrade must not mix old and
// new modules), so a browser revalidates each file on every load; the ETag lets the server answer
// 304 instead of sending the file again, and a changed ETag sends it.
func TestRevalidationAnswers304(t *testing.T) {
	h := console.Handler("/console/")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/console/app.js", nil))
	etag := rec.Header().Get("Etag")
	if rec.Code != http.StatusOK || etag == "" || rec.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("GET app.js: %d, Etag %q, Cache-Control %q", rec.Code, etag, rec.Header().Get("Cache-Control"))
	}

	req := httptest.NewRequest(http.MethodGet, "/console/app.js", nil)
	req.Header.Set("If-None-Match", etag)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
		t.Fatalf("revalidating app.js with its ETag: %d, %d bytes", rec.Code, rec.Body.Len())
	}

	req = httptest.NewRequest(http.MethodGet, "/console/app.js", nil)
	req.Header.Set("If-None-Match", `"stale"`)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || rec.Body.Len() == 0 {
		t.Fatalf("revalidating app.js with another ETag: %d, %d bytes", rec.Code, rec.Body.Len())
	}

	req = httptest.NewRequest(http.MethodGet, "/console/", nil)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Header().Get("Etag") == "" {
		t.Fatal("index.html has no ETag")
	}
}

// TestVendoredChartLibraryIsAsRecorded: the chart library's files are the ones its README.txt
// records (version, npm integrity, a SHA-256 per file), so an edit to a vendored file, or an update
// that forgot the record, fails here.
func TestVendoredChartLibraryIsAsRecorded(t *testing.T) {
	files := console.Files()
	readme, err := fs.ReadFile(files, "vendor/uplot/README.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(readme), "uPlot 1.6.32 ") {
		t.Fatalf("README.txt does not start with the version: %.40q", readme)
	}
	checked := 0
	for _, line := range strings.Split(string(readme), "\n") {
		fields := strings.Fields(line)
		if len(fields) != 3 || fields[0] != "sha256" {
			continue
		}
		body, err := fs.ReadFile(files, "vendor/uplot/"+fields[2])
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(body)
		if got := hex.EncodeToString(sum[:]); got != fields[1] {
			t.Errorf("vendor/uplot/%s has SHA-256 %s, README.txt records %s", fields[2], got, fields[1])
		}
		checked++
	}
	if checked != 3 {
		t.Fatalf("README.txt records %d sums, want 3 (module, stylesheet, licence)", checked)
	}
	license, _ := fs.ReadFile(files, "vendor/uplot/LICENSE.txt")
	if !strings.Contains(string(license), "The MIT License") {
		t.Fatal("LICENSE.txt is not uPlot's MIT licence")
	}
}
