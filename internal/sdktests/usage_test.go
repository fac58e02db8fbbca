package sdk_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/budget"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/backend/store/bolt"
	"github.com/harness-edge/harness-edge/proxy"
	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Through the SDK over real HTTP: Usage reads the totals, a start over budget is
// ErrBudgetExceeded at once (one request: its Retry-After is the window's end, not retried) with
// the header, and the snapshot carries the usage.
func TestUsageAndBudgetThroughTheSDK(t *testing.T) {
	st, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := budget.New([]budget.Limit{{Tenant: budget.AnyTenant, Tokens: 10, TokensWindow: budget.Day, Finish: true}}, st, budget.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := backend.Open(backend.Options{Store: st, Providers: []backend.Provider{mock.New()}, Budgets: b})
	if err != nil {
		t.Fatal(err)
	}
	h := proxy.New(rt, proxy.Options{RetryHint: time.Millisecond})
	var starts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/executions" {
			starts.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { h.Shutdown(); srv.Close(); rt.Close() })
	c, err := sdk.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conv, err := c.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "a b",
		Config: api.JSONObject{"usage": map[string]any{"inputTokens": 4, "outputTokens": 2}}}, sdk.RunHandlers{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Execution.Usage == nil || *res.Execution.Usage.TotalTokens != 18 {
		t.Fatalf("usage on the snapshot = %+v, want 18 tokens (3 chunks of 6)", res.Execution.Usage)
	}
	groupBy := api.GetUsageParamsGroupByProvider
	report, err := c.Usage(ctx, &api.GetUsageParams{GroupBy: &groupBy})
	if err != nil || report.Total.TotalTokens != 18 || len(report.Groups) != 1 || report.Groups[0].Key != "mock" {
		t.Fatalf("Usage = %+v, %v", report, err)
	}
	before := starts.Load()
	_, err = c.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "x"})
	var e *sdk.Error
	if !errors.Is(err, sdk.ErrBudgetExceeded) || !errors.As(err, &e) || e.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("start over budget: %v, want ErrBudgetExceeded", err)
	}
	if wait, _ := strconv.Atoi(e.Header.Get("Retry-After")); wait < 1 || wait > 86400 {
		t.Errorf("Retry-After %q, want the seconds to the end of the day", e.Header.Get("Retry-After"))
	}
	if n := starts.Load() - before; n != 1 {
		t.Errorf("the SDK sent the refused start %d times, want once", n)
	}
}
