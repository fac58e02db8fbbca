package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Budgets and max_running under concurrent starts (issue 44, item 3), through the real binary:
// 30 starts at once, each reporting 50 tokens, against `budget * { tokens 500 per day }` with
// no reservation setting, on one node (bbolt) and spread over two nodes of one PostgreSQL; and
// 30 long starts at once against `max_running 3` over those two nodes. The admission is decided
// in the commit that creates the execution, so the tokens spent stay within 1.2× the limit
// (docs/usage.md states the bound) and exactly 3 executions run, whichever node took them.

const (
	concurrentStarts = 30
	burstLimit       = 500 // tokens per day
	burstUsage       = 50  // tokens each execution reports (25 in, 25 out)
)

// budgetNodeCaddyfile writes a one-site Caddyfile whose harness block holds store and settings.
func budgetNodeCaddyfile(t *testing.T, store, settings string) string {
	t.Helper()
	text := "{\n\tadmin {$HARNESS_ADMIN}\n\tgrace_period 2s\n}\n\n" +
		"http://127.0.0.1:{$HARNESS_PORT} {\n\tbind 127.0.0.1\n\tharness {\n" +
		store + "\t\tprovider mock\n" + settings + "\t}\n}\n"
	path := filepath.Join(t.TempDir(), "Caddyfile")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// startBudgetNode starts the binary on caddyfile with extra environment.
func startBudgetNode(t *testing.T, bin, caddyfile string, env ...string) (string, *server) {
	t.Helper()
	in := newExampleInstance(t, bin, nil)
	in.plain("mock")
	in.env = append(in.env, env...)
	srv, _ := in.start(caddyfile)
	return in.base, srv
}

// burstOutcome is what 30 concurrent starts came to.
type burstOutcome struct {
	admitted []string       // execution ids answered 202
	refused  map[string]int // problem code → count
	other    []string       // anything else, for the failure message
}

// startBurst sends concurrentStarts starts at once, the i-th to bases[i%len(bases)], all in
// conversation conv (parallel: the busy policy plays no part).
func startBurst(t *testing.T, bases []string, conv string, config map[string]any) burstOutcome {
	t.Helper()
	out := burstOutcome{refused: map[string]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range concurrentStarts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			body := map[string]any{"conversationId": conv, "providerId": "mock", "input": "a", "config": config}
			a, err := call(context.Background(), http.MethodPost, bases[i%len(bases)]+"/v1/executions", body)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				out.other = append(out.other, err.Error())
			case a.status == http.StatusAccepted:
				x, err := a.execution()
				if err != nil {
					out.other = append(out.other, err.Error())
					return
				}
				out.admitted = append(out.admitted, x.ID)
			case a.status == http.StatusTooManyRequests && a.header.Get("Retry-After") != "":
				out.refused[a.problemCode()]++
			default:
				out.other = append(out.other, fmt.Sprintf("%d %s", a.status, a.body))
			}
		}()
	}
	close(gate)
	wg.Wait()
	if len(out.other) > 0 {
		t.Fatalf("starts answered neither 202 nor 429 with Retry-After: %v", out.other)
	}
	return out
}

// awaitTerminal waits until each of ids is terminal (asked of base).
func awaitTerminal(t *testing.T, base string, ids []string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute) // only keeps a broken build from hanging the run
	for _, id := range ids {
		for {
			x, err := must(t, http.MethodGet, base+"/v1/executions/"+id, nil, http.StatusOK).execution()
			if err != nil {
				t.Fatal(err)
			}
			if x.State.Terminal() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("execution %s still %s", id, x.State)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// spentTokens is GET /v1/usage's total tokens today (the anonymous tenant's).
func spentTokens(t *testing.T, base string) int64 {
	t.Helper()
	var report struct {
		Total struct {
			TotalTokens int64 `json:"totalTokens"`
		} `json:"total"`
	}
	// No range: today (UTC) so far, the budget's window.
	if err := json.Unmarshal(must(t, http.MethodGet, base+"/v1/usage", nil, http.StatusOK).body, &report); err != nil {
		t.Fatal(err)
	}
	return report.Total.TotalTokens
}

// burstSpends runs bursts of reporting starts, each once the previous one's executions are
// terminal, until a burst is refused whole, and returns the tokens spent: within 1.2× the
// limit, and most of the budget usable (the reservations return what was not used).
func burstSpends(t *testing.T, bases []string, delayMs int) int64 {
	t.Helper()
	conv := decode(t, must(t, http.MethodPost, bases[0]+"/v1/conversations", map[string]any{}, http.StatusCreated).body)["id"].(string)
	config := map[string]any{"usage": map[string]any{"inputTokens": burstUsage / 2, "outputTokens": burstUsage / 2}, "delayMs": delayMs}
	var spent int64
	var last burstOutcome
	for round := 1; round <= 6; round++ {
		last = startBurst(t, bases, conv, config)
		awaitTerminal(t, bases[0], last.admitted)
		spent = spentTokens(t, bases[0])
		t.Logf("delayMs %d over %d node(s), burst %d: %d of %d admitted, refused %v; %d tokens spent of %d (%.2f×)",
			delayMs, len(bases), round, len(last.admitted), concurrentStarts, last.refused, spent, burstLimit, float64(spent)/burstLimit)
		if round == 1 && len(last.admitted) == 0 {
			t.Fatalf("no start of the first burst admitted")
		}
		for code := range last.refused {
			if code != "BUDGET_EXCEEDED" && code != "RATE_LIMITED" {
				t.Errorf("a start refused with %s", code)
			}
		}
		if len(last.admitted) == 0 {
			break
		}
	}
	if limit := int64(burstLimit * 12 / 10); spent > limit {
		t.Errorf("%d tokens spent against a budget of %d: more than 1.2× (%d)", spent, burstLimit, limit)
	}
	if spent < burstLimit*8/10 || last.refused["BUDGET_EXCEEDED"] != concurrentStarts {
		t.Errorf("bursts stopped at %d tokens of %d, the last refused %v: want the budget spent, then BUDGET_EXCEEDED", spent, burstLimit, last.refused)
	}
	return spent
}

func TestBudgetHoldsUnderConcurrentStartsOnOneNode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)
	for _, delayMs := range []int{300, 0} {
		t.Run(fmt.Sprintf("delayMs %d", delayMs), func(t *testing.T) {
			store := "\t\tstore bolt " + t.TempDir() + "\n"
			base, srv := startBudgetNode(t, bin, budgetNodeCaddyfile(t, store, fmt.Sprintf("\t\tbudget * {\n\t\t\ttokens %d per day\n\t\t}\n", burstLimit)))
			burstSpends(t, []string{base}, delayMs)
			srv.stop(t)
		})
	}
}

func TestBudgetAndMaxRunningHoldAcrossTwoNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary and PostgreSQL; run without -short")
	}
	bin := buildCaddy(t)
	nodes := func(t *testing.T, settings string) []string {
		dsn := clusterDatabase(t)
		var bases []string
		for _, name := range []string{"a", "b"} {
			store := "\t\tstore postgres {\n\t\t\tdsn " + dsn + "\n\t\t\tnode " + name + "\n\t\t\tlease 10s\n\t\t}\n"
			base, srv := startBudgetNode(t, bin, budgetNodeCaddyfile(t, store, settings))
			t.Cleanup(func() { srv.stop(t) })
			bases = append(bases, base)
		}
		return bases
	}

	t.Run("budget", func(t *testing.T) {
		burstSpends(t, nodes(t, fmt.Sprintf("\t\tbudget * {\n\t\t\ttokens %d per day\n\t\t}\n", burstLimit)), 300)
	})

	t.Run("max_running", func(t *testing.T) {
		bases := nodes(t, "\t\tmax_running 3\n")
		conv := decode(t, must(t, http.MethodPost, bases[0]+"/v1/conversations", map[string]any{}, http.StatusCreated).body)["id"].(string)
		// Long enough that none finishes while the starts are answered.
		out := startBurst(t, bases, conv, map[string]any{"delayMs": 20000})
		t.Logf("max_running 3 over 2 nodes: %d of %d admitted, refused %v", len(out.admitted), concurrentStarts, out.refused)
		if len(out.admitted) != 3 || out.refused["RATE_LIMITED"] != concurrentStarts-3 {
			t.Errorf("max_running 3 over two nodes admitted %d of %d (refused %v), want exactly 3", len(out.admitted), concurrentStarts, out.refused)
		}
		for _, id := range out.admitted {
			must(t, http.MethodPost, bases[0]+"/v1/executions/"+id+":cancel", map[string]any{}, http.StatusOK)
		}
		awaitTerminal(t, bases[0], out.admitted)
		if t.Failed() {
			return
		}
		// A slot frees when its execution ends, whichever node ran it.
		again := startBurst(t, bases[1:], conv, map[string]any{"delayMs": 20000})
		if len(again.admitted) != 3 {
			t.Errorf("after cancelling the three, %d of %d admitted, want 3", len(again.admitted), concurrentStarts)
		}
		for _, id := range again.admitted {
			must(t, http.MethodPost, bases[0]+"/v1/executions/"+id+":cancel", map[string]any{}, http.StatusOK)
		}
	})
}
