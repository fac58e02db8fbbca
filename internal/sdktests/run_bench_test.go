package sdk_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/proxy"
	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// BenchmarkRunE2E measures end-to-end executions per second through Run against the real
// server on loopback (bbolt store, mock provider, "hello runtime": 7 events), 32 concurrent
// callers as in harness-load's e2e phase:
//
//   - one-request: the start answers with the event stream (harness-edge's extension);
//   - start+events: a wrapper drops Accept from starts, so the server answers 202 as the
//     reference does and Run starts, then streams.
//
// Client and server share the machine; compare the two on the same run only.
//
//	go test -run '^$' -bench BenchmarkRunE2E -benchtime 5s ./internal/sdktests/
func BenchmarkRunE2E(b *testing.B) {
	for _, mode := range []struct {
		name     string
		streamed bool
	}{{"one-request", true}, {"start+events", false}} {
		b.Run(mode.name, func(b *testing.B) {
			rt, err := local.Open(b.TempDir(), backend.Options{Providers: []backend.Provider{mock.New()}})
			if err != nil {
				b.Fatal(err)
			}
			h := proxy.New(rt, proxy.Options{})
			var handler http.Handler = h
			if !mode.streamed {
				handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodPost && r.URL.Path == "/v1/executions" {
						r.Header.Del("Accept")
					}
					h.ServeHTTP(w, r)
				})
			}
			hs := httptest.NewServer(handler)
			b.Cleanup(func() { h.Shutdown(); hs.Close(); _ = rt.Close() })
			// Enough idle connections for every caller, as harness-load has (see
			// docs/performance-log.md, "Notes for client and operator code").
			transport := http.DefaultTransport.(*http.Transport).Clone()
			transport.MaxIdleConnsPerHost = 1024
			c, err := sdk.New(hs.URL, sdk.WithHTTPClient(&http.Client{Transport: transport}))
			if err != nil {
				b.Fatal(err)
			}
			conv, err := c.CreateConversation(context.Background(), api.CreateConversationRequest{})
			if err != nil {
				b.Fatal(err)
			}
			req := api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "hello runtime",
				Config: api.JSONObject{"delayMs": 0}}
			b.SetParallelism(16) // 32 callers on 2 cores
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					res, err := c.Run(context.Background(), req, sdk.RunHandlers{})
					if err != nil || !res.Succeeded() {
						b.Errorf("Run: %s, %v", res.Execution.State, err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "executions/s")
		})
	}
}
