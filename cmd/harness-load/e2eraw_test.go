package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/internal/loopback"
)

// The e2e phase's raw way against a real runtime (bbolt in a temporary directory, HTTP over
// loopback): every execution is started with a POST that carries no Idempotency-Key and is
// answered 202, then its stream is read to run.completed; the phase counts the 7 events of each.
func TestE2ERawStartsWithoutAnIdempotencyKeyAndReadsEveryStream(t *testing.T) {
	var mu sync.Mutex
	var starts, keyed, streams int
	url := loopback.Serve(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			switch {
			case r.Method == http.MethodPost && r.URL.Path == "/v1/executions":
				starts++
				if r.Header.Get("Idempotency-Key") != "" || strings.Contains(peekBody(r), "idempotencyKey") {
					keyed++
				}
			case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/events"):
				streams++
			}
			mu.Unlock()
			h.ServeHTTP(w, r)
		})
	})

	cfg := config{baseURL: url, provider: mock.ID, phaseTimeout: time.Minute, clients: 2,
		e2eStart: e2eStartRaw, e2eMax: 6, e2eDuration: time.Minute}
	res, err := newLoad(cfg).phaseE2E(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 {
		t.Fatalf("%d errors, first: %s", res.Errors, res.FirstError)
	}
	if res.Count != 6 {
		t.Fatalf("%d executions completed, want 6", res.Count)
	}
	mu.Lock()
	defer mu.Unlock()
	if starts != 6 || streams != 6 || keyed != 0 {
		t.Fatalf("%d starts (%d with an idempotency key) and %d streams, want 6 unkeyed starts and 6 streams", starts, keyed, streams)
	}
	if got := res.Extra["eventsPerSecond"] * res.Seconds; got < 6*7-0.5 || got > 6*7+0.5 {
		t.Fatalf("%.1f events read, want 7 per execution", got)
	}
	if !strings.Contains(strings.Join(res.Notes, " "), "raw HTTP") {
		t.Fatalf("notes %q do not say the client was raw HTTP", res.Notes)
	}
}

// peekBody returns r's body and puts it back for the handler.
func peekBody(r *http.Request) string {
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	return string(b)
}
