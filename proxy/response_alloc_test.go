package proxy

import (
	"net/http"
	"testing"
)

// headerOnlyWriter is a ResponseWriter whose header map is reused, so that what writeRawJSON
// allocates is its own.
type headerOnlyWriter struct{ h http.Header }

func (w *headerOnlyWriter) Header() http.Header         { return w.h }
func (w *headerOnlyWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *headerOnlyWriter) WriteHeader(int)             {}

// A JSON answer (the 202 of every portable start among them) sets its Content-Type from one
// shared value instead of a new slice per answer; Content-Length is the one header value it
// makes.
func TestJSONAnswerAllocatesOnlyItsContentLength(t *testing.T) {
	w := &headerOnlyWriter{h: http.Header{}}
	body := []byte(`{"id":"exec_1"}`)
	writeRawJSON(w, http.StatusAccepted, body)
	if got := w.h.Get("Content-Type"); got != contentTypeJSON {
		t.Fatalf("Content-Type %q, want %q", got, contentTypeJSON)
	}
	if got := w.h.Get("Content-Length"); got != "15" {
		t.Fatalf("Content-Length %q, want 15", got)
	}
	if allocs := testing.AllocsPerRun(100, func() { writeRawJSON(w, http.StatusAccepted, body) }); allocs > 1 {
		t.Fatalf("writeRawJSON allocated %.0f times; want at most 1 (the Content-Length value)", allocs)
	}
}
