package caddymodule

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/openapi"
)

// get sends GET path to the caddytest server and returns the status, the Content-Type and the
// body.
func get(t *testing.T, path string) (int, string, string) {
	t.Helper()
	resp, err := http.Get(httpURL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
}

func notFoundBody(path string) string {
	return `{"code":"NOT_FOUND","message":"Route not found: GET ` + path +
		` (this server answers the Harness Runtime API under /v1; its OpenAPI document is GET /v1/openapi.yaml)"}`
}

// TestHarnessAloneAnswersEveryPath: a site whose only handler is harness answers paths outside
// the protocol with the JSON 404 Problem, not Caddy's empty 200, and serves its OpenAPI
// document.
func TestHarnessAloneAnswersEveryPath(t *testing.T) {
	loadCaddyfile(t, `
http://localhost:9080 {
	harness {
		data_dir `+t.TempDir()+`
	}
}
`)
	for _, path := range []string{"/", "/openapi.yaml", "/index.html"} {
		status, ct, body := get(t, path)
		if status != http.StatusNotFound || ct != "application/json" || body != notFoundBody(path) {
			t.Fatalf("GET %s: %d %q %s", path, status, ct, body)
		}
	}
	status, ct, body := get(t, "/v1/openapi.yaml")
	if status != http.StatusOK || ct != "application/yaml" || body != string(openapi.Document) {
		t.Fatalf("GET /v1/openapi.yaml: %d %q (%d bytes)", status, ct, len(body))
	}
}

// TestHarnessSharesASite: the handlers after harness keep answering the paths they serve —
// with a body, with a bodiless status, from files, and with their own errors — and only what
// none of them answers gets the 404 Problem.
func TestHarnessSharesASite(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "page.txt"), []byte("static page"), 0o600); err != nil {
		t.Fatal(err)
	}
	loadCaddyfile(t, `
http://localhost:9080 {
	harness {
		data_dir `+t.TempDir()+`
	}
	header /decorated X-Decorated yes
	respond /hello "next handler" 200
	respond /empty 204
	handle /static/* {
		uri strip_prefix /static
		root * `+root+`
		file_server
	}
}
`)
	if status, _, body := get(t, "/hello"); status != http.StatusOK || body != "next handler" {
		t.Fatalf("respond: %d %s", status, body)
	}
	if status, _, body := get(t, "/empty"); status != http.StatusNoContent || body != "" {
		t.Fatalf("bodiless respond: %d %s", status, body)
	}
	if status, _, body := get(t, "/static/page.txt"); status != http.StatusOK || body != "static page" {
		t.Fatalf("file_server: %d %s", status, body)
	}
	// file_server's own 404 is an error Caddy answers; harness does not replace it.
	if status, ct, _ := get(t, "/static/missing.txt"); status != http.StatusNotFound || strings.HasPrefix(ct, "application/json") {
		t.Fatalf("file_server 404: %d %q", status, ct)
	}
	// A handler that only sets a header answers nothing: the 404 Problem, with the header.
	resp, err := http.Get(httpURL + "/decorated")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || string(body) != notFoundBody("/decorated") || resp.Header.Get("X-Decorated") != "yes" {
		t.Fatalf("header only: %d %s %v", resp.StatusCode, body, resp.Header)
	}
	if status, _, body := get(t, "/elsewhere"); status != http.StatusNotFound || body != notFoundBody("/elsewhere") {
		t.Fatalf("unhandled path: %d %s", status, body)
	}
}
