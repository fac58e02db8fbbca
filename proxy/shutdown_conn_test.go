package proxy

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// Shutdown interrupts a blocked stream through the deadline of net/http's own writer. That
// writer sets deadlines itself, so a stream keeps it as is rather than making a
// ResponseController per stream (an allocation on every stream request); behind a wrapper
// without Unwrap, a controller is still made. (TestShutdownInterruptsAStreamWhoseClientDoesNotRead
// shows the interruption itself.)
func TestConnectionControllerIsNetHTTPsOwnWriter(t *testing.T) {
	type result struct {
		own, controller bool
	}
	got := make(chan result, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		wrapped := &trackingWriter{ResponseWriter: w}
		var c, hidden writeDeadliner = connectionController(wrapped), connectionController(opaqueWriter{w})
		own := c == w.(writeDeadliner)
		_, controller := hidden.(*http.ResponseController)
		got <- result{own, controller}
	}))
	defer srv.Close()
	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	r := <-got
	if !r.own {
		t.Fatal("the connection's deadline is not set through net/http's own writer")
	}
	if !r.controller {
		t.Fatal("a writer that hides net/http's gets no ResponseController")
	}
}

// opaqueWriter hides the writer it wraps (no Unwrap).
type opaqueWriter struct{ http.ResponseWriter }
