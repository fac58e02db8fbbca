package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// TestClusterThroughLoadBalancer runs the protocol on a cluster as an operator would deploy it
// (docs/scale-out.md): a throw-away PostgreSQL (internal/pgtest), two real Caddy nodes started
// from examples/cluster.Caddyfile, and a real Caddy load balancer from
// examples/cluster-lb.Caddyfile in front of them, round robin, so consecutive requests alternate
// nodes. One database and one pair of nodes serve every subtest, which keeps the test short;
// the owner-failure subtest starts a third node of its own, to kill it.
func TestClusterThroughLoadBalancer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary and PostgreSQL; run without -short")
	}
	dsn := clusterDatabase(t)
	bin := buildCaddy(t)
	harnessctl := buildHarnessctl(t)
	as := unprivilegedUser(t, bin)

	a := startClusterNode(t, bin, as, dsn, "a", "10s")
	b := startClusterNode(t, bin, as, dsn, "b", "10s")
	lb, lbSrv := startLoadBalancer(t, bin, as, a, b)

	t.Run("the load balancer alternates nodes", func(t *testing.T) {
		var seen []string
		for range 6 {
			seen = append(seen, must(t, http.MethodGet, lb+"/v1/runtime", nil, http.StatusOK).node())
		}
		for i := 1; i < len(seen); i++ {
			if seen[i] == seen[i-1] || (seen[i] != "a" && seen[i] != "b") {
				t.Fatalf("nodes that answered six consecutive requests: %v, want a and b alternating", seen)
			}
		}
	})

	t.Run("conformance through the load balancer", func(t *testing.T) {
		out, err := exec.CommandContext(t.Context(), harnessctl, "conformance",
			"--base", lb, "--provider", "mock", "--timeout", "30s").CombinedOutput()
		if err != nil {
			t.Fatalf("harnessctl conformance through the load balancer: %v\n%s", err, out)
		}
		summary := lineWith(string(out), " passed, ")
		if !strings.HasSuffix(summary, " passed, 0 failed") {
			t.Fatalf("conformance summary %q, want every check passed:\n%s", summary, out)
		}
		t.Logf("%s", summary)
	})

	t.Run("start, stream, respond, cancel and replay on alternating nodes", func(t *testing.T) {
		acrossNodes(t, lb)
	})

	t.Run("50 identical starts across nodes make one execution", func(t *testing.T) {
		idempotentStarts(t, lb, 50)
	})

	t.Run("20 cancels across nodes make one run.cancelled", func(t *testing.T) {
		concurrentCancels(t, lb, 20)
	})

	t.Run("respond raced on both nodes: one success, one ACTION_ALREADY_RESOLVED", func(t *testing.T) {
		racedResponds(t, a, b)
	})

	t.Run("200 subscribers over both nodes get every event exactly once", func(t *testing.T) {
		fanOut(t, lb, 200)
	})

	t.Run("SIGKILL of the owner: one run.failed on the other node", func(t *testing.T) {
		// A node of its own, with a short lease: the failure is seen within about 2 s.
		c := startClusterNode(t, bin, as, dsn, "c", "2s")
		ownerKilled(t, c, b)
	})

	// Every node and the balancer stop cleanly on SIGTERM, the database still up.
	for _, srv := range []*server{lbSrv, a.srv, b.srv} {
		srv.stop(t)
	}
}

// acrossNodes walks one execution through the protocol with every request going through the
// balancer, so each request lands on the other node than the one before: the node that
// answered is checked at every step, so "on the other node" is a fact of the test, not a hope.
func acrossNodes(t *testing.T, lb string) {
	// Approval then input: two answers, one on each node.
	x, started := startExecution(t, lb, "across two nodes", map[string]any{"requireApproval": true, "requestInput": true})
	owner := started.node()
	stream, err := openEvents(t.Context(), lb, x.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stream.node == owner {
		t.Fatalf("the stream was opened on the owner %s: the balancer did not alternate", owner)
	}
	// action.required arrives on the other node while the run waits: the stream is live and
	// unbuffered through the balancer (the run cannot end before the answer below).
	approval := actionID(t, last(stream.until(t, api.StandardEventTypeActionRequired, time.Minute)).event)
	approved := must(t, http.MethodPost, lb+"/v1/executions/"+x.ID+"/actions/"+approval+":respond", map[string]any{"approved": true}, http.StatusOK)
	input := actionID(t, last(stream.until(t, api.StandardEventTypeActionRequired, time.Minute)).event)
	answered := must(t, http.MethodPost, lb+"/v1/executions/"+x.ID+"/actions/"+input+":respond", map[string]any{"value": "from the other node"}, http.StatusOK)
	if approved.node() == answered.node() {
		t.Fatalf("both answers went to node %s", approved.node())
	}
	seen := stream.until(t, api.StandardEventTypeRunCompleted, time.Minute)
	completed, err := last(seen).event.Data.AsRunCompletedData()
	if err != nil || !strings.HasSuffix(completed.FinalOutput, "from the other node") {
		t.Fatalf("run.completed %+v (%v), want the final output to carry the answer given on the other node", completed, err)
	}

	// Cancel on the node that does not run it; it returns once the execution is terminal.
	y, startedY := startExecution(t, lb, "cancel me elsewhere", map[string]any{"requireApproval": true})
	ys, err := openEvents(t.Context(), lb, y.ID)
	if err != nil {
		t.Fatal(err)
	}
	ys.until(t, api.StandardEventTypeActionRequired, time.Minute)
	// Conversation, start, stream: the next request reaches the owner, the one after the other.
	if got, _ := must(t, http.MethodGet, lb+"/v1/executions/"+y.ID, nil, http.StatusOK).execution(); got.State != api.ExecutionStateAwaitingApproval {
		t.Fatalf("execution %s is %s, want awaiting_approval", y.ID, got.State)
	}
	cancelled := must(t, http.MethodPost, lb+"/v1/executions/"+y.ID+":cancel", map[string]any{"reason": "cancelled on the other node"}, http.StatusOK)
	if cancelled.node() == startedY.node() {
		t.Fatalf("the cancel went to the owner %s", cancelled.node())
	}
	if got, err := cancelled.execution(); err != nil || got.State != api.ExecutionStateCancelled {
		t.Fatalf("cancel answered %s (%v), want the cancelled execution", cancelled.body, err)
	}
	ys.until(t, api.StandardEventTypeRunCancelled, time.Minute)

	// Replay on either node: the same bytes, the same events as streamed.
	for _, id := range []string{x.ID, y.ID} {
		first, fromOne := replay(t, lb, id)
		second, fromOther := replay(t, lb, id)
		if fromOne.node() == fromOther.node() {
			t.Fatalf("both replays came from node %s", fromOne.node())
		}
		if string(fromOne.body) != string(fromOther.body) {
			t.Fatalf("replay of %s differs between nodes:\n%s: %s\n%s: %s", id, fromOne.node(), fromOne.body, fromOther.node(), fromOther.body)
		}
		if !contiguous(first.Events) || len(first.Events) != len(second.Events) {
			t.Fatalf("replay of %s: sequences not 1..n: %v", id, first.Events)
		}
	}
}

// idempotentStarts sends n identical starts (same conversation, same idempotency key) at once
// through the balancer, so half reach each node: one execution, the others replay it.
func idempotentStarts(t *testing.T, lb string, n int) {
	conv := decode(t, must(t, http.MethodPost, lb+"/v1/conversations", map[string]any{}, http.StatusCreated).body)
	body := map[string]any{"conversationId": conv["id"], "providerId": "mock", "input": "once", "idempotencyKey": "fifty-at-once"}
	answers := parallel(t, n, func(ctx context.Context, _ int) (answer, error) {
		return call(ctx, http.MethodPost, lb+"/v1/executions", body)
	})
	ids, nodes := map[string]bool{}, map[string]int{}
	replayed := 0
	for _, a := range answers {
		if a.status != http.StatusAccepted {
			t.Fatalf("a concurrent identical start answered %d: %s", a.status, a.body)
		}
		x, err := a.execution()
		if err != nil {
			t.Fatal(err)
		}
		ids[x.ID] = true
		nodes[a.node()]++
		if a.header.Get("Idempotent-Replayed") == "true" {
			replayed++
		}
	}
	if len(ids) != 1 || replayed != n-1 {
		t.Fatalf("%d starts gave executions %v with %d replays, want one execution and %d replays", n, ids, replayed, n-1)
	}
	if len(nodes) != 2 {
		t.Fatalf("the starts reached nodes %v, want both", nodes)
	}
	list := must(t, http.MethodGet, lb+"/v1/conversations/"+conv["id"].(string)+"/executions", nil, http.StatusOK)
	var page api.ExecutionList
	if err := json.Unmarshal(list.body, &page); err != nil || len(page.Executions) != 1 {
		t.Fatalf("the conversation lists %s (%v), want one execution", list.body, err)
	}
}

// concurrentCancels cancels one waiting execution n times at once, half through each node:
// every answer is the cancelled execution, and the log has exactly one run.cancelled.
func concurrentCancels(t *testing.T, lb string, n int) {
	x, _ := startExecution(t, lb, "cancel me twenty times", map[string]any{"requireApproval": true})
	s, err := openEvents(t.Context(), lb, x.ID)
	if err != nil {
		t.Fatal(err)
	}
	s.until(t, api.StandardEventTypeActionRequired, time.Minute)
	answers := parallel(t, n, func(ctx context.Context, i int) (answer, error) {
		return call(ctx, http.MethodPost, lb+"/v1/executions/"+x.ID+":cancel", map[string]any{"reason": fmt.Sprintf("cancel %d", i)})
	})
	nodes := map[string]int{}
	for _, a := range answers {
		got, err := a.execution()
		if a.status != http.StatusOK || err != nil || got.State != api.ExecutionStateCancelled {
			t.Fatalf("a concurrent cancel answered %d: %s", a.status, a.body)
		}
		nodes[a.node()]++
	}
	if len(nodes) != 2 {
		t.Fatalf("the cancels reached nodes %v, want both", nodes)
	}
	s.until(t, api.StandardEventTypeRunCancelled, time.Minute)
	list, _ := replay(t, lb, x.ID)
	if c := countType(list.Events, api.StandardEventTypeRunCancelled); c != 1 || !contiguous(list.Events) {
		t.Fatalf("after %d cancels: %d run.cancelled in %d events (contiguous %v), want one", n, c, len(list.Events), contiguous(list.Events))
	}
}

// racedResponds answers one pending approval on both nodes at once, directly (not through the
// balancer), the owner and the other: one succeeds, the other is ACTION_ALREADY_RESOLVED.
func racedResponds(t *testing.T, a, b *clusterNode) {
	for round := range 3 { // the owner alternates: a, b, a
		owner, other := a, b
		if round%2 == 1 {
			owner, other = b, a
		}
		x, _ := startExecution(t, owner.base, "answer me twice", map[string]any{"requireApproval": true})
		s, err := openEvents(t.Context(), other.base, x.ID)
		if err != nil {
			t.Fatal(err)
		}
		action := actionID(t, last(s.until(t, api.StandardEventTypeActionRequired, time.Minute)).event)
		nodes := []*clusterNode{owner, other}
		answers := parallel(t, 2, func(ctx context.Context, i int) (answer, error) {
			return call(ctx, http.MethodPost, nodes[i].base+"/v1/executions/"+x.ID+"/actions/"+action+":respond", map[string]any{"approved": i == 0})
		})
		var ok, resolved int
		for _, ans := range answers {
			switch {
			case ans.status == http.StatusOK:
				ok++
			case ans.status == http.StatusConflict && ans.problemCode() == "ACTION_ALREADY_RESOLVED":
				resolved++
			default:
				t.Fatalf("a raced respond (owner %s) answered %d: %s", owner.name, ans.status, ans.body)
			}
		}
		if ok != 1 || resolved != 1 {
			t.Fatalf("raced responds (owner %s): %d successes, %d ACTION_ALREADY_RESOLVED; want one of each", owner.name, ok, resolved)
		}
		s.rest(t, time.Minute)
		list, _ := replay(t, other.base, x.ID)
		if c := countType(list.Events, api.StandardEventTypeActionResponded); c != 1 {
			t.Fatalf("raced responds recorded %d action.responded, want one", c)
		}
	}
}

// fanOut opens n subscribers through the balancer (so half on each node) on an execution that
// waits for approval, approves it, and requires every subscriber to receive every event of the
// replay exactly once, in order, byte for byte.
func fanOut(t *testing.T, lb string, n int) {
	x, _ := startExecution(t, lb, strings.Repeat("fan out to both nodes ", 25), map[string]any{"requireApproval": true, "delayMs": 1})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	streams := make([]*sseStream, n)
	for i := range n { // sequentially: the balancer's turn decides the node
		s, err := openEvents(ctx, lb, x.ID)
		if err != nil {
			t.Fatal(err)
		}
		streams[i] = s
	}
	perNode := map[string]int{}
	got := make([][]streamed, n)
	var action string
	for i, s := range streams {
		perNode[s.node]++
		got[i] = s.until(t, api.StandardEventTypeActionRequired, time.Minute)
		action = actionID(t, last(got[i]).event)
	}
	if perNode["a"] != n/2 || perNode["b"] != n/2 {
		t.Fatalf("subscribers per node %v, want %d on each", perNode, n/2)
	}
	must(t, http.MethodPost, lb+"/v1/executions/"+x.ID+"/actions/"+action+":respond", map[string]any{"approved": true}, http.StatusOK)

	var wg sync.WaitGroup
	rests := make([][]streamed, n)
	for i, s := range streams {
		wg.Go(func() { rests[i] = drain(s) })
	}
	wg.Wait()
	want, _ := replay(t, lb, x.ID)
	if countType(want.Events, api.StandardEventTypeRunCompleted) != 1 {
		t.Fatalf("the fanned-out execution did not complete: %v", want.Events)
	}
	for i := range n {
		all := append(got[i], rests[i]...)
		if len(all) != len(want.Events) {
			t.Fatalf("subscriber %d (node %s) got %d events, the replay has %d", i, streams[i].node, len(all), len(want.Events))
		}
		for j, ev := range all {
			if ev.err != nil {
				t.Fatalf("subscriber %d (node %s): %v", i, streams[i].node, ev.err)
			}
			if ev.event.Sequence != want.Events[j].Sequence || ev.event.Type != want.Events[j].Type {
				t.Fatalf("subscriber %d (node %s) event %d is %s #%d, the replay's %s #%d", i, streams[i].node, j, ev.event.Type, ev.event.Sequence, want.Events[j].Type, want.Events[j].Sequence)
			}
		}
	}
}

// drain reads a stream to its end; a stream error is kept as the last element.
func drain(s *sseStream) []streamed {
	var out []streamed
	for ev := range s.events {
		out = append(out, ev)
	}
	return out
}

// ownerKilled starts two executions on node c (one waiting for approval, one streaming slowly),
// follows both from node other (and the slow one on c too), kills c with SIGKILL and requires,
// on other's streams, exactly one run.failed each, naming c, once c's lease expires; every event
// a subscriber on either node had received before the kill is still in the replay, byte for
// byte; the pending action then answers ACTION_NOT_FOUND.
func ownerKilled(t *testing.T, c, other *clusterNode) {
	waiting, _ := startExecution(t, c.base, "never answered", map[string]any{"requireApproval": true})
	slow, _ := startExecution(t, c.base, strings.Repeat("slow ", 400), map[string]any{"delayMs": 50})
	ws, err := openEvents(t.Context(), other.base, waiting.ID)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := openEvents(t.Context(), other.base, slow.ID)
	if err != nil {
		t.Fatal(err)
	}
	// A subscriber on the owner itself: what it was sent before the kill was acknowledged too.
	onOwner, err := openEvents(t.Context(), c.base, slow.ID)
	if err != nil {
		t.Fatal(err)
	}
	beforeWaiting := ws.until(t, api.StandardEventTypeActionRequired, time.Minute)
	action := actionID(t, last(beforeWaiting).event)
	beforeSlow := ss.until(t, api.StandardEventTypeOutputTextDelta, time.Minute)
	beforeSlow = append(beforeSlow, ss.until(t, api.StandardEventTypeOutputTextDelta, time.Minute)...)
	t.Logf("killing %s with %d events of the slow run seen on %s", c.name, len(beforeSlow), other.name)

	if err := c.srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	<-c.srv.exited
	var fromOwner []streamed
	for _, ev := range drain(onOwner) {
		if ev.err == nil { // the connection ends with an error: the process died
			fromOwner = append(fromOwner, ev)
		}
	}

	// The guard is generous (the lease is 2 s); the time it took is logged, not asserted.
	afterWaiting := ws.rest(t, time.Minute)
	afterSlow := ss.rest(t, time.Minute)
	took := time.Since(killed)
	t.Logf("run.failed reached node %s %s after the SIGKILL of %s (lease 2s)", other.name, took.Round(time.Millisecond), c.name)
	// Not a speed check: c's configured lease must be the one in force. With it, c's lease
	// lapses at most 2 s after the kill and other claims it on its next tick (every third of
	// its own 10 s lease): about 2-6 s. Were the Caddyfile's lease ignored, the default (10 s
	// in the module, 15 s in the runtime) could not lapse before about 9.3 s after the kill.
	if took >= 9*time.Second {
		t.Fatalf("run.failed came %s after the kill: c's lease of 2s is not the one in force", took.Round(time.Millisecond))
	}

	for _, tc := range []struct {
		id            string
		before, after []streamed
	}{{waiting.ID, beforeWaiting, afterWaiting}, {slow.ID, beforeSlow, afterSlow}} {
		seen := append(slices.Clone(tc.before), tc.after...)
		if n := len(seen); n == 0 || seen[n-1].event.Type != api.StandardEventTypeRunFailed {
			t.Fatalf("%s: the stream on %s ended with %v, want run.failed last", tc.id, other.name, streamedTypes(seen))
		}
		events := make([]api.RuntimeEvent, len(seen))
		for i, ev := range seen {
			events[i] = ev.event
		}
		if countType(events, api.StandardEventTypeRunFailed) != 1 || !contiguous(events) {
			t.Fatalf("%s: streamed %v, want contiguous sequences and one run.failed", tc.id, streamedTypes(seen))
		}
		failed, err := last(seen).event.Data.AsRunFailedData()
		if err != nil {
			t.Fatal(err)
		}
		if want := "Node " + c.name + " stopped"; !strings.Contains(failed.Message, want) {
			t.Fatalf("%s: run.failed %s %q, want a message with %q", tc.id, failed.Code, failed.Message, want)
		}
		// Nothing acknowledged is lost: what the other node delivered before the kill is in
		// the replay, byte for byte, followed by the one run.failed.
		list, raw := replay(t, other.base, tc.id)
		if len(list.Events) != len(seen) {
			t.Fatalf("%s: replay has %d events, the stream had %d", tc.id, len(list.Events), len(seen))
		}
		acknowledged := tc.before
		if tc.id == slow.ID {
			acknowledged = append(slices.Clone(acknowledged), fromOwner...)
		}
		for _, ev := range acknowledged {
			if !strings.Contains(string(raw.body), ev.raw) {
				t.Fatalf("%s: event #%d received before the kill is not in the replay as received:\n%s", tc.id, ev.event.Sequence, ev.raw)
			}
		}
		if got := decode(t, must(t, http.MethodGet, other.base+"/v1/executions/"+tc.id, nil, http.StatusOK).body); got["state"] != string(api.ExecutionStateFailed) {
			t.Fatalf("%s: state %v after the owner died, want failed", tc.id, got["state"])
		}
	}
	ans := must(t, http.MethodPost, other.base+"/v1/executions/"+waiting.ID+"/actions/"+action+":respond", map[string]any{"approved": true}, http.StatusNotFound)
	if ans.problemCode() != "ACTION_NOT_FOUND" {
		t.Fatalf("answering the dead node's action: %s, want ACTION_NOT_FOUND", ans.body)
	}
}

// parallel runs fn n times at once (released together) and returns the answers in order; a
// transport error fails the test.
func parallel(t *testing.T, n int, fn func(ctx context.Context, i int) (answer, error)) []answer {
	t.Helper()
	answers := make([]answer, n)
	errs := make([]error, n)
	release := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-release
			answers[i], errs[i] = fn(t.Context(), i)
		})
	}
	close(release)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return answers
}

func last[T any](s []T) T { return s[len(s)-1] }

// lineWith is the first line of s that contains substr ("" when none).
func lineWith(s, substr string) string {
	for line := range strings.Lines(s) {
		if strings.Contains(line, substr) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}
