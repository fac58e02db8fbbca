// Package console is the harness web console: a few static files, embedded in the binary, that
// let a person watch executions live, answer approvals and input requests, cancel, and start new
// executions from a browser. It talks to the server only through the public Harness Runtime API
// (/v1/…) of the same origin, so it sees exactly what the caller's credentials and tenant allow and
// holds no secret of its own.
//
// The assets are plain HTML, CSS and JavaScript ES modules, written by hand, with no build step and
// nothing loaded from a CDN. Why: the console must work offline and behind a strict
// Content-Security-Policy (no inline code, no third-party origin), must be reviewable as it is
// served, and must not add a Node toolchain to building a Go binary. A few hundred lines of
// modules are enough for four views; a framework's build output would be larger than the console.
package console

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed static
var staticFiles embed.FS

// ContentSecurityPolicy is sent with every console response. Everything comes from the console's
// own origin; nothing inline runs (scripts and styles are files), nothing frames the console
// (clickjacking an "Approve" button is the attack this stops), and forms post only to the origin.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// contentTypes is fixed here rather than taken from the system's MIME tables: browsers refuse an
// ES module served with anything but a JavaScript type, and those tables differ between machines.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
	".txt":  "text/plain; charset=utf-8", // the vendored chart library's licence and version notes
}

// Files returns the console's files, as served (index.html at the root).
func Files() fs.FS {
	assets, err := fs.Sub(staticFiles, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return assets
}

// ContentType returns the type the console serves a file name with, or "" for an unknown extension.
func ContentType(name string) string {
	return contentTypes[path.Ext(name)]
}

// Handler serves the console under prefix, which must start and end with "/" (e.g. "/console/").
// A request for the prefix without its final slash is redirected to it, so relative asset URLs
// resolve. Only GET and HEAD are answered; other methods get 405.
func Handler(prefix string) http.Handler {
	files := http.FileServerFS(Files())
	etags := contentETags(Files())
	bare := strings.TrimSuffix(prefix, "/")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header := w.Header()
		header.Set("Content-Security-Policy", ContentSecurityPolicy)
		header.Set("X-Content-Type-Options", "nosniff")
		header.Set("Referrer-Policy", "no-referrer")
		// Revalidate on every load: after an upgrade the browser must not mix old and new modules.
		header.Set("Cache-Control", "no-cache")

		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			header.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if r.URL.Path == bare {
			target := prefix
			if r.URL.RawQuery != "" {
				target += "?" + r.URL.RawQuery
			}
			http.Redirect(w, r, target, http.StatusMovedPermanently)
			return
		}
		rest, ok := strings.CutPrefix(r.URL.Path, prefix)
		if !ok {
			http.NotFound(w, r)
			return
		}
		name := rest
		if name == "" || strings.HasSuffix(name, "/") {
			name += "index.html"
		}
		if ctype := ContentType(name); ctype != "" {
			header.Set("Content-Type", ctype)
		}
		if etag, ok := etags[name]; ok {
			header.Set("Etag", etag) // the file server answers If-None-Match with 304
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + rest
		r2.URL.RawPath = ""
		files.ServeHTTP(w, r2)
	})
}

// contentETags hashes every file once: embedded files have no modification time, so without an
// ETag each revalidation (Cache-Control: no-cache) would download the file again.
func contentETags(files fs.FS) map[string]string {
	etags := make(map[string]string)
	_ = fs.WalkDir(files, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(files, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		etags[name] = `"` + hex.EncodeToString(sum[:16]) + `"`
		return nil
	})
	return etags
}

// Handles reports whether path belongs to a console served under prefix.
func Handles(prefix, path string) bool {
	return path == strings.TrimSuffix(prefix, "/") || strings.HasPrefix(path, prefix)
}
