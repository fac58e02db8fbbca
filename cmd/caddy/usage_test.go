package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// budgetsCaddyfile is examples/tenants.Caddyfile with the budget settings given.
func budgetsCaddyfile(t *testing.T, budgets string) string {
	t.Helper()
	src, err := os.ReadFile(tenantsCaddyfile)
	if err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Abs(filepath.Dir(tenantsCaddyfile))
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	for old, repl := range map[string]string{
		"\t\tprovider mock\n":         "\t\tprovider mock\n" + budgets,
		"import problem-errors.caddy": "import " + filepath.Join(examples, "problem-errors.caddy"),
	} {
		if !strings.Contains(text, old) {
			t.Fatalf("examples/tenants.Caddyfile no longer contains %q", old)
		}
		text = strings.Replace(text, old, repl, 1)
	}
	path := filepath.Join(t.TempDir(), "Caddyfile")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Budgets through the real binary: alice's looping execution is cancelled when it reaches her
// budget, the reason naming it; her next start answers 429 BUDGET_EXCEEDED with Retry-After at
// the day's end; bob, meanwhile, is untouched; each sees only their own totals; the usage
// counters name alice (a budget names her) and count bob as other. And `caddy validate` refuses
// a budget that cannot be met, naming its line.
func TestBudgetsThroughCaddy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)

	// validate adapts the whole file: basic_auth, before the harness block, needs its hashes.
	env := tenantsEnv(t, bin, 8)
	bad := budgetsCaddyfile(t, "\t\tbudget alice {\n\t\t\tcost 10 XYZ per month\n\t\t}\n")
	validate := exec.Command(bin, "validate", "--config", bad, "--adapter", "caddyfile")
	validate.Env = env
	out, err := validate.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `currency \"XYZ\" is not an ISO 4217 code`) || !strings.Contains(string(out), "Caddyfile:") {
		t.Fatalf("caddy validate of a budget in XYZ: %v\n%s", err, out)
	}

	srv := startCaddyWith(t, bin, env, budgetsCaddyfile(t, "\t\tbudget alice {\n\t\t\ttokens 100 per day\n\t\t}\n\t\tbudget * {\n\t\t\tcost 1 EUR per month\n\t\t}\n"))
	alice := user{t: t, base: srv.url, name: "alice", password: passwords["alice"]}
	bob := user{t: t, base: srv.url, name: "bob", password: passwords["bob"]}
	startWith := func(u user, config map[string]any) (int, http.Header, map[string]any) {
		body, _ := json.Marshal(map[string]any{"conversationId": u.conversation(), "providerId": "mock", "input": "a b c", "config": config})
		status, header, raw := u.send(http.MethodPost, "/v1/executions", string(body), nil)
		return status, header, decode(t, raw)
	}
	step := map[string]any{"inputTokens": 9, "outputTokens": 1, "cost": "0.001", "currency": "EUR"} // 10 tokens a chunk
	_, _, looping := startWith(alice, map[string]any{"usage": step, "repeat": 100000, "delayMs": 2})
	_, _, bobs := startWith(bob, map[string]any{"usage": step, "repeat": 3, "delayMs": 2})

	cancelled := alice.untilEvent(looping["id"].(string), api.StandardEventTypeRunCancelled)
	if data, _ := cancelled.AsRunCancelledData(); data.Reason == nil || !strings.Contains(*data.Reason, `Budget exceeded: tenant "alice": 100 tokens per day`) {
		t.Fatalf("run.cancelled %+v: the reason does not name alice's budget", data)
	}
	x := alice.must(http.MethodGet, "/v1/executions/"+looping["id"].(string), "", http.StatusOK)
	spent := x["usage"].(map[string]any)["totalTokens"].(float64)
	if spent < 100 || spent > 110 {
		t.Errorf("alice's execution spent %v tokens, want 100 (one report more at most)", spent)
	}
	status, header, problem := startWith(alice, map[string]any{})
	wait, _ := strconv.Atoi(header.Get("Retry-After"))
	if status != http.StatusTooManyRequests || problem["code"] != "BUDGET_EXCEEDED" || wait < 1 || wait > 86400 {
		t.Fatalf("alice's start over budget: %d %v Retry-After %q", status, problem, header.Get("Retry-After"))
	}
	bob.untilEvent(bobs["id"].(string), api.StandardEventTypeRunCompleted)
	if status, _, _ := startWith(bob, map[string]any{}); status != http.StatusAccepted {
		t.Fatalf("bob's start answered %d: alice's budget stopped him", status)
	}

	for _, tc := range []struct {
		u      user
		tokens float64
	}{{alice, spent}, {bob, 120}} {
		report := tc.u.must(http.MethodGet, "/v1/usage?groupBy=provider", "", http.StatusOK)
		if got := report["total"].(map[string]any)["totalTokens"].(float64); got != tc.tokens {
			t.Errorf("%s's totals: %v tokens, want %v", tc.u.name, got, tc.tokens)
		}
	}

	metrics := scrape(t, "http://"+lookup(env, "HARNESS_ADMIN")+"/metrics")
	for _, want := range []string{
		`harness_usage_tokens_total{kind="total",provider="mock",tenant="alice"} ` + strconv.Itoa(int(spent)),
		`harness_usage_tokens_total{kind="total",provider="mock",tenant="other"} 120`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s:\n%s", want, grepLines(metrics, "harness_usage"))
		}
	}
	cost := strings.TrimPrefix(grepLines(metrics, `harness_usage_cost_total{currency="EUR",provider="mock",tenant="other"}`), `harness_usage_cost_total{currency="EUR",provider="mock",tenant="other"} `)
	if v, err := strconv.ParseFloat(cost, 64); err != nil || v < 0.011999 || v > 0.012001 {
		t.Errorf("bob's cost counter %q, want 0.012 (EUR)", cost)
	}
	srv.stop(t)
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return string(raw)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func grepLines(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
