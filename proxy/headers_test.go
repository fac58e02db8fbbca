package proxy

import (
	"net/http"
	"testing"
)

// The values setHeaders writes share one allocation but no header can reach another's value:
// an Add, or an in-place rewrite (as Caddy's header directive does), changes only its own.
func TestSetHeadersValuesAreIndependent(t *testing.T) {
	h := http.Header{}
	setHeaders(h, "cache-control", "no-cache", "X-Accel-Buffering", "no", "Content-Type", "text/event-stream")
	if got := h.Get("Cache-Control"); got != "no-cache" {
		t.Fatalf("Cache-Control = %q (keys are canonicalised)", got)
	}
	h.Add("Cache-Control", "private")
	h["X-Accel-Buffering"][0] = "yes"
	if got := h.Values("Content-Type"); len(got) != 1 || got[0] != "text/event-stream" {
		t.Fatalf("Content-Type = %q after other headers changed", got)
	}
	if got := h.Values("Cache-Control"); len(got) != 2 || got[1] != "private" {
		t.Fatalf("Cache-Control = %q", got)
	}
	if got := h.Get("X-Accel-Buffering"); got != "yes" {
		t.Fatalf("X-Accel-Buffering = %q", got)
	}
}
