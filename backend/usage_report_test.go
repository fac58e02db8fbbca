package backend_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/usage"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// syncBuffer is a log destination safe for the runtime's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A provider's reports: each good one is on the snapshot and on the stream (provider.event
// {provider: harness, type: usage}); a bad one — negative, beyond 2^53, an unknown currency, a
// count that goes down, a cost that changes currency — is ignored, logged once per execution,
// and the execution goes on and succeeds.
func TestUsageReports(t *testing.T) {
	good1 := usage.Usage{InputTokens: 100, OutputTokens: 20, CachedReadTokens: 50, Cost: usage.Money{Micros: 1_500, Currency: "USD"}}
	good2 := usage.Usage{InputTokens: 300, OutputTokens: 60, CachedReadTokens: 50, ThoughtTokens: 5, Cost: usage.Money{Micros: 4_000, Currency: "USD"}, ContextSize: 200000, ContextUsed: 365}
	bad := []usage.Usage{
		{InputTokens: -1},
		{InputTokens: 1 << 53},
		{InputTokens: 400, Cost: usage.Money{Micros: 5_000, Currency: "XYZ"}},
		{InputTokens: 400, Cost: usage.Money{Micros: 5_000, Currency: "usd"}},
		{InputTokens: 400, Cost: usage.Money{Micros: 5_000}},
		{InputTokens: 200, OutputTokens: 60, Cost: usage.Money{Micros: 4_000, Currency: "USD"}}, // goes down
		{InputTokens: 400, OutputTokens: 60, Cost: usage.Money{Micros: 5_000, Currency: "EUR"}}, // changes currency
	}
	var logs syncBuffer
	p := &scripted{run: func(ctx context.Context, run *backend.Run) (backend.Result, error) {
		for _, u := range append([]usage.Usage{good1}, append(bad[:3], append([]usage.Usage{good2}, bad[3:]...)...)...) {
			if err := run.ReportUsage(u); err != nil {
				return backend.Result{}, err
			}
		}
		if err := run.ReportUsage(good2); err != nil { // unchanged: nothing new
			return backend.Result{}, err
		}
		return backend.Result{FinalOutput: "done"}, nil
	}}
	rt := scriptedRuntime(t, backend.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, p)
	exec := startScripted(t, rt, newConversation(t, rt))
	events, final := finalOf(t, rt, exec.ID)
	checkLog(t, final, events)
	if final.State != api.ExecutionStateSucceeded {
		t.Fatalf("state %s, want succeeded: bad reports must not stop the execution", final.State)
	}
	var reported []string
	for _, e := range events {
		if e.Type != api.StandardEventTypeProviderEvent {
			continue
		}
		raw, _ := json.Marshal(e.Data)
		reported = append(reported, string(raw))
	}
	want := []string{
		`{"provider":"harness","type":"usage","usage":{"cachedReadTokens":50,"cost":{"amount":"0.0015","currency":"USD"},"inputTokens":100,"outputTokens":20,"totalTokens":120}}`,
		`{"provider":"harness","type":"usage","usage":{"cachedReadTokens":50,"contextSize":200000,"contextUsed":365,"cost":{"amount":"0.004","currency":"USD"},"inputTokens":300,"outputTokens":60,"thoughtTokens":5,"totalTokens":365}}`,
	}
	if strings.Join(reported, "\n") != strings.Join(want, "\n") {
		t.Errorf("usage events:\n%s\nwant\n%s", strings.Join(reported, "\n"), strings.Join(want, "\n"))
	}
	snap, _ := json.Marshal(final.Usage)
	if got := `{"provider":"harness","type":"usage","usage":` + string(snap) + `}`; got != want[1] {
		t.Errorf("snapshot usage %s, want the last report's", snap)
	}
	if n := strings.Count(logs.String(), "provider reported usage that cannot be right"); n != 1 {
		t.Errorf("%d warnings about bad usage, want 1 per execution:\n%s", n, logs.String())
	}
}

// GET /v1/usage's sums: every tenant sees its own executions only, grouped by provider,
// conversation or day, and a cancelled execution's usage counts.
func TestUsageTotals(t *testing.T) {
	p := &scripted{run: func(ctx context.Context, run *backend.Run) (backend.Result, error) {
		n := int64(len(run.Input()))
		if err := run.ReportUsage(usage.Usage{InputTokens: n, OutputTokens: 1, Cost: usage.Money{Micros: n * 1000, Currency: "EUR"}}); err != nil {
			return backend.Result{}, err
		}
		if run.Input() == "cancel me" {
			<-ctx.Done()
			return backend.Result{}, context.Cause(ctx)
		}
		return backend.Result{}, nil
	}}
	rt := scriptedRuntime(t, optsNone(), p)
	as := func(tenant string) context.Context { return backend.WithTenant(ctxT(t), backend.Tenant{ID: tenant}) }
	run := func(tenant, conv, input string) {
		x, _, err := rt.StartExecution(as(tenant), api.StartExecutionRequest{ConversationID: conv, ProviderID: "scripted", Input: input})
		if err != nil {
			t.Fatal(err)
		}
		if input == "cancel me" {
			for e, err := range backend.FollowExecution(as(tenant), rt, x.ID, 0) {
				if err != nil {
					t.Fatal(err)
				}
				if e.Type == api.StandardEventTypeProviderEvent {
					break
				}
			}
			if _, err := rt.CancelExecution(as(tenant), x.ID, nil); err != nil {
				t.Fatal(err)
			}
		}
		waitTerminalAs(t, as(tenant), rt, x.ID)
	}
	conv := func(tenant string) string {
		c, err := rt.CreateConversation(as(tenant), nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	a1, a2, b1 := conv("a"), conv("a"), conv("b")
	run("a", a1, "xx")        // 2+1 tokens, 0.002 EUR
	run("a", a1, "cancel me") // 9+1, 0.009
	run("a", a2, "xxxx")      // 4+1, 0.004
	run("b", b1, "xxxxxxxx")  // b's: 8+1, 0.008
	from, to := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	for _, c := range []struct {
		tenant, groupBy string
		want            string // total tokens, then groups key=tokens
	}{
		{"a", "", "18"},
		{"a", "conversation", "18 " + a1 + "=13 " + a2 + "=5"},
		{"a", "provider", "18 scripted=18"},
		{"a", "day", "18 " + time.Now().UTC().Format(time.DateOnly) + "=18"},
		{"b", "", "9"},
		{"c", "provider", "0"},
	} {
		r, err := rt.Usage(as(c.tenant), backend.UsageQuery{From: from, To: to, GroupBy: c.groupBy})
		if err != nil {
			t.Fatal(err)
		}
		got := []string{jsonString(r.Total.TotalTokens)}
		for _, g := range r.Groups {
			got = append(got, g.Key+"="+jsonString(g.Total.TotalTokens))
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%s by %q: %s, want %s", c.tenant, c.groupBy, strings.Join(got, " "), c.want)
		}
		if c.tenant == "a" && (len(r.Total.Costs) != 1 || r.Total.Costs[0] != (api.Cost{Amount: "0.015", Currency: "EUR"})) {
			t.Errorf("a's costs %+v, want 0.015 EUR", r.Total.Costs)
		}
	}
	for _, q := range []backend.UsageQuery{
		{From: to, To: from},
		{From: from.Add(-400 * 24 * time.Hour), To: to},
		{From: from, To: to, GroupBy: "week"},
		{From: from, To: to, Limit: 1001},
	} {
		if _, err := rt.Usage(as("a"), q); backend.ErrorCode(err) != backend.CodeValidation {
			t.Errorf("%+v: %v, want VALIDATION_ERROR", q, err)
		}
	}
}

// The execution span carries the GenAI semantic conventions' usage attributes (and ours for
// what they lack): the last cumulative values reported.
func TestUsageOnTheExecutionSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	p := &scripted{run: func(ctx context.Context, run *backend.Run) (backend.Result, error) {
		for _, n := range []int64{10, 25} {
			if err := run.ReportUsage(usage.Usage{InputTokens: n, OutputTokens: 3, CachedReadTokens: 4, Cost: usage.Money{Micros: n * 1000, Currency: "EUR"}}); err != nil {
				return backend.Result{}, err
			}
		}
		return backend.Result{}, nil
	}}
	rt := scriptedRuntime(t, backend.Options{TracerProvider: tp}, p)
	conv := newConversation(t, rt)
	ctx, request := tp.Tracer("test").Start(ctxT(t), "request")
	exec, _, err := rt.StartExecution(ctx, startReq(conv, startOpts{provider: "scripted"}))
	request.End()
	if err != nil {
		t.Fatal(err)
	}
	finalOf(t, rt, exec.ID)
	got := attrs(endedSpan(t, rec, "harness.execution"))
	for k, v := range map[string]string{
		"gen_ai.usage.input_tokens": "25", "gen_ai.usage.output_tokens": "3", "gen_ai.usage.cache_read.input_tokens": "4",
		"harness.usage.total_tokens": "28", "harness.usage.cost": "0.025", "harness.usage.currency": "EUR",
	} {
		if got[k] != v {
			t.Errorf("span attribute %s = %q, want %q", k, got[k], v)
		}
	}
}
