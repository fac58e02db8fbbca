package clustertest

import (
	"context"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/budget"
	"github.com/harness-edge/harness-edge/backend/cluster"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/backend/store/postgres"
	"github.com/harness-edge/harness-edge/backend/usage"
	"github.com/harness-edge/harness-edge/internal/pgtest"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// metered reports cumulative usage: Run reports 10 and 20 tokens and waits (its node is killed
// there); Resume, on the node that took the execution over, continues the same count to 30 and
// finishes.
type metered struct{}

const meteredID = "metered"

func (metered) Manifest() api.ProviderManifest {
	m := (&reattacher{}).Manifest()
	m.ID, m.Name = meteredID, "Reports usage, re-attaches after a failover"
	return m
}

func tokens(n int64) usage.Usage {
	return usage.Usage{InputTokens: n, Cost: usage.Money{Micros: n * 100, Currency: "USD"}}
}

func (metered) Run(ctx context.Context, run *backend.Run) (backend.Result, error) {
	for _, n := range []int64{10, 20} {
		if err := run.ReportUsage(tokens(n)); err != nil {
			return backend.Result{}, err
		}
	}
	if err := run.EmitText("metered"); err != nil {
		return backend.Result{}, err
	}
	<-ctx.Done()
	return backend.Result{}, context.Cause(ctx)
}

func (metered) Resume(ctx context.Context, run *backend.Run) (backend.Result, error) {
	if err := run.ReportUsage(tokens(30)); err != nil {
		return backend.Result{}, err
	}
	return backend.Result{FinalOutput: "metered resumed"}, nil
}

// openMeteredNode is openNode with budgets read from the node's own store, refreshed as the
// Caddy module does on a shared store (every 100 ms here).
func openMeteredNode(t *testing.T, dsn, name string, limits []budget.Limit) *node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	st, err := postgres.Open(ctx, postgres.Config{DSN: dsn, Node: name})
	if err != nil {
		t.Fatal(err)
	}
	b, err := budget.New(limits, st, budget.Options{Refresh: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := backend.Open(backend.Options{
		Store: st, Node: name, Providers: []backend.Provider{mock.New(), metered{}}, Budgets: b,
		Cluster: cluster.New(st, cluster.Options{Lease: testLease}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return &node{name: name, dsn: dsn, rt: rt}
}

// Usage on two nodes of one PostgreSQL database, the owner of two executions killed mid-run:
// the execution its provider can re-attach is resumed on the other node and continues its count
// (30, not 20 + 30), the one it cannot is failed and keeps what it spent; every node's totals
// are the sum of the executions' own usage, nothing counted twice; and a tenant's budget spent
// on one node refuses starts on the other (decided in the start's commit).
func TestUsageAcrossNodesWithAKilledOwner(t *testing.T) {
	dsn := pgtest.Start(t).NewDatabase(t)
	// A reservation per execution: three run side by side (without one, the budget would admit
	// one execution at a time until one had settled).
	limits := []budget.Limit{{Tenant: budget.AnyTenant, Tokens: 500, TokensWindow: budget.Day, ReserveTokens: 50}}
	a, b := openMeteredNode(t, dsn, "a", limits), openMeteredNode(t, dsn, "b", limits)
	c := openMeteredNode(t, dsn, "c", limits) // a node that runs none of it
	conv := newConversation(t, a)
	resumed := start(t, a, api.StartExecutionRequest{ConversationID: conv, ProviderID: meteredID, Input: "x"})
	failed := start(t, a, mockRequest(conv, "one two three", api.JSONObject{
		"delayMs": 20, "usage": map[string]any{"inputTokens": 7}, "repeat": 1000, // 7 tokens a chunk, until killed
	}))
	onB := start(t, b, mockRequest(conv, "four five", api.JSONObject{"usage": map[string]any{"inputTokens": 5}}))
	waitForEvent(t, b, resumed.ID, api.StandardEventTypeOutputTextDelta)
	waitForEvent(t, c, resumed.ID, api.StandardEventTypeOutputTextDelta)
	waitForEvent(t, b, failed.ID, api.StandardEventTypeProviderEvent)
	if err := a.rt.Close(); err != nil { // as a killed node: its executions are left unfinished
		t.Fatal(err)
	}
	for _, id := range []string{resumed.ID, failed.ID, onB.ID} {
		follow(t, b, id, 0)
	}
	var sum int64
	want := map[string]api.ExecutionState{resumed.ID: api.ExecutionStateSucceeded, failed.ID: api.ExecutionStateFailed, onB.ID: api.ExecutionStateSucceeded}
	for id, state := range want {
		x, err := b.rt.GetExecution(ctxT(t), id)
		if err != nil || x.State != state || x.Usage == nil {
			t.Fatalf("%s: %s (%+v) with usage %+v (%v), want %s with usage", id, x.State, x.Error, x.Usage, err, state)
		}
		sum += *x.Usage.TotalTokens
	}
	if x, _ := b.rt.GetExecution(ctxT(t), resumed.ID); *x.Usage.TotalTokens != 30 || x.Usage.Cost.Amount != "0.003" {
		t.Errorf("the resumed execution's usage %+v, want 30 tokens and 0.003 USD (continued, not added)", x.Usage)
	}
	for _, n := range []*node{b, c} {
		r, err := n.rt.Usage(ctxT(t), backend.UsageQuery{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Minute)})
		if err != nil || r.Total.TotalTokens != sum || r.Total.Executions != 3 {
			t.Errorf("totals on %s: %+v (%v), want %d tokens of 3 executions", n.name, r.Total, err, sum)
		}
	}

	// Spend the rest of the budget on b; c refuses the next start once it has read it.
	for {
		x, _, err := b.rt.StartExecution(ctxT(t), mockRequest(conv, "spend", api.JSONObject{"usage": map[string]any{"inputTokens": 25}}))
		if backend.ErrorCode(err) == backend.CodeBudgetExceeded {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		follow(t, b, x.ID, 0)
	}
	deadline := time.Now().Add(testTimeout)
	for {
		_, _, err := c.rt.StartExecution(ctxT(t), mockRequest(conv, "over", nil))
		if backend.ErrorCode(err) == backend.CodeBudgetExceeded {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("node c never refused a start over the budget spent on b")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
