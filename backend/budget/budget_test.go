package budget_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/budget"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/backend/store/bolt"
	"github.com/harness-edge/harness-edge/backend/usage"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// A real runtime on a real bbolt file, the mock reporting usage after every chunk, and the
// budgets reading spending from that store.

const testTimeout = 30 * time.Second

type fixture struct {
	t   *testing.T
	dir string
	rt  *backend.Runtime
}

func open(t *testing.T, dir string, limits []budget.Limit) *fixture {
	t.Helper()
	st, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := budget.New(limits, st, budget.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := backend.Open(backend.Options{Store: st, Providers: []backend.Provider{mock.New()}, Budgets: b})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return &fixture{t: t, dir: dir, rt: rt}
}

func (f *fixture) ctx(tenant string) context.Context {
	ctx, cancel := context.WithTimeout(backend.WithTenant(context.Background(), backend.Tenant{ID: tenant}), testTimeout)
	f.t.Cleanup(cancel)
	return ctx
}

// start starts the mock for tenant: each chunk of "a b c d" (4 per repeat) reports step more.
func (f *fixture) start(tenant string, step api.JSONObject, repeat int) (api.Execution, error) {
	return f.startEvery(tenant, step, repeat, 1)
}

// startEvery starts an execution reporting step once per chunk, a chunk every delayMs.
func (f *fixture) startEvery(tenant string, step api.JSONObject, repeat, delayMs int) (api.Execution, error) {
	ctx := f.ctx(tenant)
	conv, err := f.rt.CreateConversation(ctx, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	x, _, err := f.rt.StartExecution(ctx, api.StartExecutionRequest{
		ConversationID: conv.ID, ProviderID: mock.ID, Input: "a b c d",
		Config: api.JSONObject{"prefix": "", "delayMs": delayMs, "usage": step, "repeat": repeat},
	})
	return x, err
}

func (f *fixture) wait(tenant, id string) api.Execution {
	f.t.Helper()
	deadline := time.Now().Add(testTimeout)
	for time.Now().Before(deadline) {
		x, err := f.rt.GetExecution(f.ctx(tenant), id)
		if err != nil {
			f.t.Fatal(err)
		}
		if x.State.Terminal() {
			return x
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.t.Fatalf("execution %s did not finish", id)
	return api.Execution{}
}

func (f *fixture) events(tenant, id string) []map[string]any {
	evs, _, err := f.rt.ListEvents(f.ctx(tenant), id, 0, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []map[string]any
	for _, e := range evs {
		var m map[string]any
		if err := json.Unmarshal(e.JSON, &m); err != nil {
			f.t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func totalTokens(x api.Execution) int64 {
	if x.Usage == nil || x.Usage.TotalTokens == nil {
		return 0
	}
	return *x.Usage.TotalTokens
}

func TestBudgets(t *testing.T) {
	step := api.JSONObject{"inputTokens": 7, "outputTokens": 3} // 10 tokens a chunk
	for _, c := range []struct {
		name  string
		limit budget.Limit
		// the looping execution's end
		wantState api.ExecutionState
		repeat    int
	}{
		{"cancel", budget.Limit{Tenant: "alice", Tokens: 95, TokensWindow: budget.Day}, api.ExecutionStateCancelled, 1000},
		{"each tenant", budget.Limit{Tenant: budget.AnyTenant, Tokens: 95, TokensWindow: budget.Month}, api.ExecutionStateCancelled, 1000},
		{"per provider", budget.Limit{Tenant: "alice", Provider: mock.ID, Tokens: 95, TokensWindow: budget.Day}, api.ExecutionStateCancelled, 1000},
		{"finish the turn", budget.Limit{Tenant: "alice", Tokens: 95, TokensWindow: budget.Day, Finish: true}, api.ExecutionStateSucceeded, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := open(t, t.TempDir(), []budget.Limit{c.limit})
			x, err := f.start("alice", step, c.repeat)
			if err != nil {
				t.Fatal(err)
			}
			// Meanwhile another tenant works, untouched by alice's budget (or by its own, when
			// every tenant has one: it spends less).
			other, err := f.start("bob", step, 2)
			if err != nil {
				t.Fatal(err)
			}
			end := f.wait("alice", x.ID)
			if end.State != c.wantState {
				t.Fatalf("alice's execution ended %s, want %s (usage %d tokens)", end.State, c.wantState, totalTokens(end))
			}
			spent := totalTokens(end)
			if c.wantState == api.ExecutionStateCancelled {
				// Cancelled at the report that reached the limit (100 ≥ 95), give or take the one
				// report committed while the cancellation was on its way.
				if spent < 100 || spent > 110 {
					t.Errorf("alice spent %d tokens, want 100 (or 110: one report in flight)", spent)
				}
				if end.Error != nil || !strings.Contains(reasonOf(f.events("alice", x.ID)), "Budget exceeded") {
					t.Errorf("the cancellation does not name the budget: %v", reasonOf(f.events("alice", x.ID)))
				}
			}
			if !hasBudgetExceeded(f.events("alice", x.ID)) {
				t.Error("no budget.exceeded provider.event recorded")
			}
			if b := f.wait("bob", other.ID); b.State != api.ExecutionStateSucceeded || totalTokens(b) != 80 {
				t.Errorf("bob's execution: %s with %d tokens, want succeeded with 80", b.State, totalTokens(b))
			}
			// Alice's next start is refused until the window ends; bob's is not.
			_, err = f.start("alice", step, 1)
			var be *backend.Error
			if !errors.As(err, &be) || be.Code != backend.CodeBudgetExceeded || be.RetryAfter < 1 || be.RetryAfter > 31*24*3600 {
				t.Fatalf("alice's next start: %v (%+v), want BUDGET_EXCEEDED with a Retry-After within the window", err, be)
			}
			if _, err := f.start("bob", step, 1); err != nil {
				t.Errorf("bob's start: %v", err)
			}
			// The totals agree with the executions' own usage.
			report, err := f.rt.Usage(f.ctx("alice"), backend.UsageQuery{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Minute)})
			if err != nil || report.Total.TotalTokens != spent || report.Total.Executions != 1 {
				t.Errorf("alice's totals: %+v, %v; want %d tokens of 1 execution", report.Total, err, spent)
			}
		})
	}
}

// What was spent is read back from the store: a restart does not give the budget back.
func TestBudgetSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	limits := []budget.Limit{{Tenant: "alice", Cost: usage.Money{Micros: 50_000, Currency: "USD"}, CostWindow: budget.Day}}
	f := open(t, dir, limits)
	x, err := f.start("alice", api.JSONObject{"inputTokens": 1, "cost": "0.01", "currency": "USD"}, 1) // 0.04 USD
	if err != nil {
		t.Fatal(err)
	}
	if end := f.wait("alice", x.ID); end.Usage == nil || end.Usage.Cost == nil || end.Usage.Cost.Amount != "0.04" {
		t.Fatalf("usage = %+v", end.Usage)
	}
	// A cost in another currency does not count against a USD budget.
	y, _ := f.start("alice", api.JSONObject{"inputTokens": 1, "cost": "5", "currency": "EUR"}, 1)
	f.wait("alice", y.ID)
	f.rt.Close()

	f = open(t, dir, limits)
	z, err := f.start("alice", api.JSONObject{"inputTokens": 1, "cost": "0.01", "currency": "USD"}, 1)
	if err != nil {
		t.Fatalf("start under budget after restart: %v", err)
	}
	if end := f.wait("alice", z.ID); end.State != api.ExecutionStateCancelled {
		t.Errorf("the execution that crossed 0.05 USD after a restart ended %s, want cancelled", end.State)
	}
	if _, err := f.start("alice", nil, 1); backend.ErrorCode(err) != backend.CodeBudgetExceeded {
		t.Errorf("start over budget after restart: %v", err)
	}
}

func reasonOf(events []map[string]any) string {
	for _, e := range events {
		if e["type"] == "run.cancelled" {
			data, _ := e["data"].(map[string]any)
			r, _ := data["reason"].(string)
			return r
		}
	}
	return ""
}

func hasBudgetExceeded(events []map[string]any) bool {
	for _, e := range events {
		data, _ := e["data"].(map[string]any)
		if e["type"] == "provider.event" && data["provider"] == "harness" && data["type"] == "budget.exceeded" {
			return true
		}
	}
	return false
}

// A start beside a running execution, before any has settled, is refused as reserved (429
// RATE_LIMITED, a short Retry-After, a message that says so); once the estimate leaves no room
// for another, as spent (BUDGET_EXCEEDED until the window ends). With a reserve setting, starts
// run side by side while their reservations fit.
func TestBudgetReservations(t *testing.T) {
	step := api.JSONObject{"inputTokens": 7, "outputTokens": 3} // 10 tokens a chunk
	f := open(t, t.TempDir(), []budget.Limit{
		{Tenant: "alice", Tokens: 95, TokensWindow: budget.Day},
		{Tenant: "bob", Tokens: 100, TokensWindow: budget.Day, ReserveTokens: 40},
	})
	long, err := f.start("alice", step, 1000)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.start("alice", step, 1)
	var be *backend.Error
	if !errors.As(err, &be) || be.Code != backend.CodeRateLimited || be.RetryAfter != budget.ReservedRetryAfter || !strings.Contains(be.Message, "Budget reserved") {
		t.Fatalf("a start beside alice's first: %v (%+v), want RATE_LIMITED, reserved", err, be)
	}
	if end := f.wait("alice", long.ID); end.State != api.ExecutionStateCancelled {
		t.Fatalf("alice's execution ended %s, want cancelled at the limit", end.State)
	}
	if _, err = f.start("alice", step, 1); !errors.As(err, &be) || be.Code != backend.CodeBudgetExceeded || be.RetryAfter <= budget.ReservedRetryAfter {
		t.Fatalf("a start once spent: %v (%+v), want BUDGET_EXCEEDED until the day ends", err, be)
	}

	// bob reserves 40 of 100: two at once, not three. His two spend slowly (10 tokens every
	// 50 ms each), so the third start meets their reservations, not a spent budget: at 1 ms a
	// chunk they had spent 110 before the third start once on a loaded machine.
	var ids []string
	for range 2 {
		x, err := f.startEvery("bob", step, 1000, 50)
		if err != nil {
			t.Fatalf("bob's start within his reservations: %v", err)
		}
		ids = append(ids, x.ID)
	}
	if _, err := f.start("bob", step, 1); backend.ErrorCode(err) != backend.CodeRateLimited {
		t.Fatalf("bob's third start: %v, want RATE_LIMITED (reserved)", err)
	}
	for _, id := range ids {
		f.wait("bob", id)
	}
}
