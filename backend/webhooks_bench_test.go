package backend_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/webhook"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// BenchmarkWebhookOverhead runs 8 concurrent mock executions (7 events each) to the end, with no
// webhook and with one receiver subscribed to the default events (one notification each):
// what the outbox costs the execution path. Deliveries go on in the background.
func BenchmarkWebhookOverhead(b *testing.B) {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer receiver.Close()
	for _, tc := range []struct {
		name string
		subs []webhook.Subscription
	}{
		{"webhooks=none", nil},
		{"webhooks=1", []webhook.Subscription{{URL: receiver.URL, Secret: webhookSecret}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			opts := backend.Options{}
			if tc.subs != nil {
				opts.Webhooks = notifier(b, webhook.Config{Subscriptions: tc.subs})
			}
			rt := openRuntime(b, "", opts)
			conv := newConversation(b, rt)
			work := make(chan struct{})
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for range work {
						exec, _, err := rt.StartExecution(context.Background(), startReq(conv, startOpts{input: "hello runtime", config: api.JSONObject{"delayMs": 0}}))
						if err != nil {
							b.Error(err)
							continue
						}
						for range backend.FollowExecution(context.Background(), rt, exec.ID, 0) {
						}
					}
				})
			}
			b.ResetTimer()
			for range b.N {
				work <- struct{}{}
			}
			close(work)
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "executions/s")
		})
	}
}
