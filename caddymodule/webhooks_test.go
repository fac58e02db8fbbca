package caddymodule

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddytest"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

func TestAdaptWebhooks(t *testing.T) {
	caddytest.AssertAdapt(t, `
:4310 {
	harness {
		webhook https://hooks.example.com/harness {
			events action.required run.completed
			secret {env.HARNESS_WEBHOOK_SECRET}
			tenants alice bob
		}
		webhook http://127.0.0.1:9000/all {
			secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
		}
	}
}
`, "caddyfile", `{
	"apps": {
		"http": {
			"servers": {
				"srv0": {
					"listen": [
						":4310"
					],
					"routes": [
						{
							"handle": [
								{
									"handler": "harness",
									"webhooks": [
										{
											"events": [
												"action.required",
												"run.completed"
											],
											"secret": "{env.HARNESS_WEBHOOK_SECRET}",
											"tenants": [
												"alice",
												"bob"
											],
											"url": "https://hooks.example.com/harness"
										},
										{
											"secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
											"url": "http://127.0.0.1:9000/all"
										}
									]
								}
							]
						}
					]
				}
			}
		}
	}
}`)
}

func TestWebhookSettingsRejected(t *testing.T) {
	for _, tc := range []struct{ caddyfile, want string }{
		{"harness {\n webhook https://x.example {\n events run.completed\n }\n}", "secret is required"},
		{"harness {\n webhook {\n secret s\n }\n}", "wrong argument count"},
		{"harness {\n webhook https://x.example {\n secret s\n tenants\n }\n}", "wrong argument count"},
		{"harness {\n webhook https://x.example {\n secret s\n color blue\n }\n}", `unrecognized webhook setting "color"`},
	} {
		var h Harness
		err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.caddyfile))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error containing %q", tc.caddyfile, err, tc.want)
		}
	}
	for _, tc := range []struct {
		hook Webhook
		want string
	}{
		{Webhook{URL: "ftp://x.example", Secret: "s"}, "http or https"},
		{Webhook{URL: "https://x.example"}, "secret is required"},
	} {
		h := Harness{Webhooks: []Webhook{tc.hook}}
		if err := h.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error containing %q", tc.hook, err, tc.want)
		}
	}
	t.Setenv("HARNESS_TEST_WEBHOOK_SECRET", "whsec_short")
	h := Harness{Webhooks: []Webhook{{URL: "https://x.example", Secret: "{env.HARNESS_TEST_WEBHOOK_SECRET}"}}}
	if _, err := h.resolvedWebhooks(); err == nil || !strings.Contains(err.Error(), "after replacing placeholders") {
		t.Errorf("a bad secret from the environment: got %v", err)
	}
	t.Setenv("HARNESS_TEST_WEBHOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	raw, err := h.resolvedWebhooks()
	if err != nil || !strings.Contains(raw, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") {
		t.Errorf("the placeholder was not replaced: %v", err)
	}
}

// Through the real Caddy: the secret comes from the environment, the first attempt is refused,
// the second is delivered with a signature sdk.VerifyWebhook accepts, and the counters move.
func TestWebhookThroughCaddy(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	t.Setenv("HARNESS_TEST_WEBHOOK_SECRET", secret)
	var mu sync.Mutex
	var attempts int
	var got []api.WebhookPayload
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p, err := sdk.VerifyWebhook(secret, r.Header, body)
		if err != nil {
			t.Errorf("VerifyWebhook: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		attempts++
		if attempts == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		got = append(got, p)
	}))
	defer receiver.Close()

	loadCaddyfile(t, fmt.Sprintf(`
http://localhost:9080 {
	harness {
		data_dir %s
		provider mock
		webhook %s/hook {
			secret {env.HARNESS_TEST_WEBHOOK_SECRET}
		}
	}
}
`, t.TempDir(), receiver.URL))
	before := scrapeMetrics(t) // per process: compare with the values before the execution
	c := newClient(t, httpURL, nil)
	conv := c.createConversation()
	exec := c.startExecution(api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "hi"})
	// The first retry waits up to a second (the default backoff, full jitter).
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no notification delivered")
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	p := got[0]
	mu.Unlock()
	if p.Type != api.StandardEventTypeRunCompleted || p.Data.Execution.ID != exec.ID || p.Data.Execution.State != api.ExecutionStateSucceeded {
		t.Fatalf("delivered %s of %s in %s", p.Type, p.Data.Execution.ID, p.Data.Execution.State)
	}
	// The receiver has the notification before the sender has its answer and counts the
	// attempt: wait for the count (a hang guard), then check both.
	delivered := `harness_webhook_attempts_total{outcome="delivered"}`
	after := scrapeMetrics(t)
	for metricValue(after, delivered)-metricValue(before, delivered) < 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		after = scrapeMetrics(t)
	}
	for series, want := range map[string]float64{
		`harness_webhook_attempts_total{outcome="retried"}`:   1,
		`harness_webhook_attempts_total{outcome="delivered"}`: 1,
	} {
		if got := metricValue(after, series) - metricValue(before, series); got != want {
			t.Errorf("%s increased by %v, want %v", series, got, want)
		}
	}
}
