package backend_test

import (
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/budget"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/backend/store/bolt"
	"github.com/harness-edge/harness-edge/backend/webhook"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// A budget crossing is notified as budget.exceeded to the subscriptions that list it (signed,
// with the execution, valid against the OpenAPI schema), as a provider.event to those that list
// only provider.event, and to nobody else.
func TestWebhookBudgetExceeded(t *testing.T) {
	budgets, budgetsSrv := newReceiver(t, nil)
	providerEvents, providerEventsSrv := newReceiver(t, nil)
	ends, endsSrv := newReceiver(t, nil)
	st, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := budget.New([]budget.Limit{{Tenant: "alice", Tokens: 25, TokensWindow: budget.Day}}, st, budget.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := backend.Open(backend.Options{Store: st, Providers: []backend.Provider{mock.New()}, Budgets: b,
		Webhooks: notifier(t, webhook.Config{Subscriptions: []webhook.Subscription{
			{URL: budgetsSrv.URL, Secret: webhookSecret, Events: []string{"budget.exceeded", "provider.event"}},
			{URL: providerEventsSrv.URL, Secret: webhookSecret, Events: []string{"provider.event"}},
			{URL: endsSrv.URL, Secret: webhookSecret, Events: []string{"run.cancelled"}},
		}, Delivery: fastRetries})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	ctx := backend.WithTenant(ctxT(t), backend.Tenant{ID: "alice"})
	c, err := rt.CreateConversation(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	exec, _, err := rt.StartExecution(ctx, startReq(c.ID, startOpts{input: "a b c d e f", config: api.JSONObject{
		"delayMs": 1, "usage": map[string]any{"inputTokens": 10}, "repeat": 100,
	}}))
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range backend.FollowExecution(ctx, rt, exec.ID, 0) {
		if err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "an empty outbox", func() bool { return pendingWebhooks(t, rt) == 0 })
	kinds := func(rc *webhookReceiver) (out []string) {
		for _, d := range rc.delivered() {
			out = append(out, string(d.payload.Type))
		}
		return out
	}
	// 10, 20, 30 tokens: the third report crosses 25; the usage events before it, the crossing,
	// and possibly one more usage report committed before the cancellation.
	got := kinds(budgets)
	crossings, usageEvents := 0, 0
	for i, d := range budgets.delivered() {
		switch got[i] {
		case webhook.BudgetExceeded:
			crossings++
			checkAgainstSchema(t, "WebhookPayload", d.body)
		case "provider.event":
			usageEvents++
		}
	}
	if crossings != 1 || usageEvents < 3 {
		t.Errorf("the budget receiver got %v: want one budget.exceeded among the usage provider.events", got)
	}
	for _, k := range kinds(providerEvents) {
		if k != "provider.event" {
			t.Errorf("the provider.event receiver got %v: want provider.events only", kinds(providerEvents))
		}
	}
	if len(kinds(providerEvents)) != usageEvents+1 {
		t.Errorf("the provider.event receiver got %d notifications, want %d (the crossing included)", len(kinds(providerEvents)), usageEvents+1)
	}
	if k := kinds(ends); len(k) != 1 || k[0] != "run.cancelled" {
		t.Errorf("the run.cancelled receiver got %v", k)
	}
}
