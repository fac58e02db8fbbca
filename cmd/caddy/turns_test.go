package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The busy policies of a conversation (docs/protocol.md, "Busy conversations") through the
// real binary: on one node over bbolt, across a SIGKILL of the edge; and on two nodes over one
// PostgreSQL database, with starts raced over both nodes and a takeover.

// turnClient is an SDK client with short retry waits.
func turnClient(t *testing.T, base string) *sdk.Client {
	t.Helper()
	c, err := sdk.New(base, sdk.WithRetry(sdk.RetryPolicy{MinWait: 50 * time.Millisecond, MaxWait: 500 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// needsApproval makes a mock execution wait for an answer: it stays busy until cancelled,
// denied (it fails) or approved.
var needsApproval = api.JSONObject{"requireApproval": true}

func startTurn(t *testing.T, chat *sdk.Conversation, input string, config api.JSONObject, policy api.BusyPolicy) api.Execution {
	t.Helper()
	req := api.StartExecutionRequest{ProviderID: "mock", Input: input, Config: config}
	if policy != "" {
		req.BusyPolicy = &policy
	}
	exec, err := chat.Start(t.Context(), req)
	if err != nil {
		t.Fatalf("start %q: %v", input, err)
	}
	return exec
}

// awaitApproval waits until exec asks for its approval and returns the action's id.
func awaitApproval(t *testing.T, c *sdk.Client, id string) string {
	t.Helper()
	for ev, err := range c.Events(t.Context(), id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == api.StandardEventTypeActionRequired {
			return typed(ev.Data.AsActionRequest()).ID
		}
	}
	t.Fatalf("%s ended without asking for approval", id)
	return ""
}

// finalState waits for the end of id and checks its log: one terminal event, last.
func finalState(t *testing.T, c *sdk.Client, id string) (api.Execution, []api.RuntimeEvent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	exec, err := c.WaitForTerminal(ctx, id)
	if err != nil {
		t.Fatalf("wait for %s: %v", id, err)
	}
	list, err := c.ListEvents(ctx, id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	terminals := 0
	for _, ev := range list.Events {
		if ev.Type.Terminal() {
			terminals++
		}
	}
	if terminals != 1 || !last(list.Events).Type.Terminal() || last(list.Events).Type.EndState() != exec.State {
		t.Fatalf("%s (%s): log %v, want exactly one terminal event, last", id, exec.State, eventTypes(list.Events))
	}
	return exec, list.Events
}

func eventTypes(events []api.RuntimeEvent) []api.StandardEventType {
	out := make([]api.StandardEventType, len(events))
	for i, ev := range events {
		out[i] = ev.Type
	}
	return out
}

// startedAfterEnd requires that next began running no earlier than prev ended (one turn at a
// time, in order). Timestamps have millisecond resolution: equal is in order.
func startedAfterEnd(t *testing.T, prev, next api.Execution) {
	t.Helper()
	if next.StartedAt == nil || prev.EndedAt == nil || *next.StartedAt < *prev.EndedAt {
		t.Fatalf("%s (%q) started at %v, before %s (%q) ended at %v", next.ID, next.Input, jsonOf(next.StartedAt), prev.ID, prev.Input, jsonOf(prev.EndedAt))
	}
}

// TestBinaryBusyPolicies: the policies over HTTP on the embedded store, bad input, and an
// enqueued line of turns that survives a SIGKILL of the edge in arrival order.
func TestBinaryBusyPolicies(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)
	env := instanceEnv(t)
	srv := startCaddy(t, bin, env)
	c := turnClient(t, srv.url)

	t.Run("bad input answers a Problem and changes nothing", func(t *testing.T) {
		a := must(t, http.MethodPost, srv.url+"/v1/conversations", map[string]any{"busyPolicy": "rollback"}, http.StatusBadRequest)
		if a.problemCode() != "VALIDATION_ERROR" || !strings.Contains(string(a.body), "busyPolicy must be one of parallel, reject, enqueue, interrupt") {
			t.Fatalf("unknown policy on create: %s", a.body)
		}
		conv := decode(t, must(t, http.MethodPost, srv.url+"/v1/conversations", map[string]any{"busyPolicy": "reject"}, http.StatusCreated).body)
		if conv["busyPolicy"] != "reject" {
			t.Fatalf("created: %v", conv)
		}
		a = must(t, http.MethodPost, srv.url+"/v1/executions", map[string]any{
			"conversationId": conv["id"], "providerId": "mock", "input": "x", "busyPolicy": "later"}, http.StatusBadRequest)
		if a.problemCode() != "VALIDATION_ERROR" {
			t.Fatalf("unknown policy on start: %s", a.body)
		}
		a = must(t, http.MethodPost, srv.url+"/v1/executions", map[string]any{
			"conversationId": "conv_00000000000000000000000000000000", "providerId": "mock", "input": "x", "busyPolicy": "reject"}, http.StatusNotFound)
		if a.problemCode() != "NOT_FOUND" {
			t.Fatalf("policy on an unknown conversation: %s", a.body)
		}
		listed := decode(t, must(t, http.MethodGet, srv.url+fmt.Sprintf("/v1/conversations/%s/executions", conv["id"]), nil, http.StatusOK).body)
		if n := len(listed["executions"].([]any)); n != 0 {
			t.Fatalf("refused starts left %d executions", n)
		}
		// A replay under another policy is a conflict, and starts nothing.
		key := map[string]any{"conversationId": conv["id"], "providerId": "mock", "input": "x", "idempotencyKey": "k"}
		first := must(t, http.MethodPost, srv.url+"/v1/executions", key, http.StatusAccepted)
		key["busyPolicy"] = "parallel"
		if a := must(t, http.MethodPost, srv.url+"/v1/executions", key, http.StatusConflict); a.problemCode() != "IDEMPOTENCY_CONFLICT" {
			t.Fatalf("replay under another policy: %s", a.body)
		}
		key["busyPolicy"] = "reject" // the conversation's: the same request
		if again := must(t, http.MethodPost, srv.url+"/v1/executions", key, http.StatusAccepted); again.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay under the conversation's own policy was not a replay: %s", again.body)
		}
		x, _ := first.execution()
		finalState(t, c, x.ID)
	})

	t.Run("reject: 409 CONVERSATION_BUSY naming the busy execution", func(t *testing.T) {
		chat, err := c.NewConversation(t.Context(), api.BusyPolicyReject, nil)
		if err != nil {
			t.Fatal(err)
		}
		first := startTurn(t, chat, "first", needsApproval, "")
		a := must(t, http.MethodPost, srv.url+"/v1/executions", map[string]any{"conversationId": chat.ID, "providerId": "mock", "input": "second"}, http.StatusConflict)
		var p api.Problem
		if err := json.Unmarshal(a.body, &p); err != nil || p.Code != "CONVERSATION_BUSY" || p.Details == nil {
			t.Fatalf("busy answer: %s", a.body)
		}
		if got := jsonOf((*p.Details)["executionIds"]); got != jsonOf([]string{first.ID}) || (*p.Details)["conversationId"] != chat.ID {
			t.Fatalf("busy details: %s", a.body)
		}
		if _, err := c.CancelExecution(t.Context(), first.ID, api.CancelExecutionRequest{}); err != nil {
			t.Fatal(err)
		}
		second := startTurn(t, chat, "second", nil, "")
		if exec, _ := finalState(t, c, second.ID); exec.State != api.ExecutionStateSucceeded {
			t.Fatalf("second: %s", exec.State)
		}
	})

	t.Run("interrupt: the running one is cancelled naming the newer one", func(t *testing.T) {
		chat, err := c.NewConversation(t.Context(), api.BusyPolicyInterrupt, nil)
		if err != nil {
			t.Fatal(err)
		}
		first := startTurn(t, chat, "first", needsApproval, "")
		awaitApproval(t, c, first.ID)
		second := startTurn(t, chat, "second", nil, "")
		if !slices.Equal(second.WaitingFor, []string{first.ID}) {
			t.Fatalf("second waits for %v", second.WaitingFor)
		}
		exec, events := finalState(t, c, first.ID)
		data := typed(last(events).Data.AsRunCancelledData())
		if exec.State != api.ExecutionStateCancelled || data.Reason == nil || *data.Reason != "Interrupted by "+second.ID {
			t.Fatalf("first ended %s with %v", exec.State, last(events).Data)
		}
		done, _ := finalState(t, c, second.ID)
		if done.State != api.ExecutionStateSucceeded {
			t.Fatalf("second: %s", done.State)
		}
		startedAfterEnd(t, exec, done)
	})

	// Not a subtest: the server restarted here must outlive it (startCaddy stops it with the
	// test that started it).
	t.Log("enqueue: arrival order across a SIGKILL; a failed predecessor does not block")
	{
		chat, err := c.NewConversation(t.Context(), api.BusyPolicyEnqueue, nil)
		if err != nil {
			t.Fatal(err)
		}
		running := startTurn(t, chat, "running", needsApproval, "")
		awaitApproval(t, c, running.ID)
		denied := startTurn(t, chat, "denied", needsApproval, "") // will fail: denied
		var line []api.Execution
		for i := range 5 {
			line = append(line, startTurn(t, chat, fmt.Sprintf("turn %d", i), nil, ""))
		}
		for i, exec := range line {
			want := []string{running.ID, denied.ID}
			for _, before := range line[:i] {
				want = append(want, before.ID)
			}
			if exec.State != api.ExecutionStateQueued || !slices.Equal(exec.WaitingFor, want) {
				t.Fatalf("%q: %s waiting for %v, want %v", exec.Input, exec.State, exec.WaitingFor, want)
			}
		}

		if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-srv.exited
		srv = startCaddy(t, bin, env)
		c = turnClient(t, srv.url)

		ran, _ := finalState(t, c, running.ID)
		if ran.State != api.ExecutionStateFailed || ran.Error == nil || ran.Error.Message != "Runtime restarted before the execution finished" {
			t.Fatalf("the running one after the kill: %s %+v", ran.State, ran.Error)
		}
		// The waiting ones waited on: denied gets its turn, asks, and is denied (it fails);
		// the line behind it runs all the same, one at a time, in arrival order.
		action := awaitApproval(t, c, denied.ID)
		if _, err := c.RespondToAction(t.Context(), denied.ID, action, api.ActionResponse{Approved: new(false)}); err != nil {
			t.Fatal(err)
		}
		prev, _ := finalState(t, c, denied.ID)
		if prev.State != api.ExecutionStateFailed {
			t.Fatalf("denied: %s", prev.State)
		}
		for _, exec := range line {
			done, events := finalState(t, c, exec.ID)
			if done.State != api.ExecutionStateSucceeded || done.WaitingFor != nil {
				t.Fatalf("%q: %s, waiting for %v; log %v", exec.Input, done.State, done.WaitingFor, eventTypes(events))
			}
			startedAfterEnd(t, prev, done)
			prev = done
		}
	}
	checkTurnInvariants(t, c)
	srv.stop(t)
}

// TestClusterBusyPolicies: two nodes over one PostgreSQL database. Fifty starts on one reject
// conversation, split over both nodes, accept exactly one; an enqueued line whose middle is
// owned by a node killed with SIGKILL is taken over by the other node and still runs in
// arrival order; afterwards every execution has exactly one terminal event and none is left
// queued.
func TestClusterBusyPolicies(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary and PostgreSQL; run without -short")
	}
	dsn := clusterDatabase(t)
	bin := buildCaddy(t)
	as := unprivilegedUser(t, bin)
	a := startClusterNode(t, bin, as, dsn, "a", "2s")
	b := startClusterNode(t, bin, as, dsn, "b", "2s")
	ca, cb := turnClient(t, a.base), turnClient(t, b.base)

	t.Run("50 rejects split over two nodes accept exactly one", func(t *testing.T) {
		chat, err := ca.NewConversation(t.Context(), api.BusyPolicyReject, nil)
		if err != nil {
			t.Fatal(err)
		}
		const n = 50
		answers := make([]answer, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			base := a.base
			if i%2 == 1 {
				base = b.base
			}
			wg.Go(func() {
				answers[i], errs[i] = call(t.Context(), http.MethodPost, base+"/v1/executions", map[string]any{
					"conversationId": chat.ID, "providerId": "mock", "input": fmt.Sprint(i), "config": needsApproval})
			})
		}
		wg.Wait()
		var accepted []api.Execution
		nodes := map[string]int{}
		for i, ans := range answers {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			switch {
			case ans.status == http.StatusAccepted:
				x, _ := ans.execution()
				accepted = append(accepted, x)
			case ans.status == http.StatusConflict && ans.problemCode() == "CONVERSATION_BUSY":
				nodes[ans.node()]++
			default:
				t.Fatalf("start %d: %d %s", i, ans.status, ans.body)
			}
		}
		if len(accepted) != 1 {
			t.Fatalf("%d starts accepted, want exactly one", len(accepted))
		}
		t.Logf("one accepted; refused with CONVERSATION_BUSY by node a %d times, by node b %d times", nodes["a"], nodes["b"])
		if nodes["a"] == 0 || nodes["b"] == 0 {
			t.Fatalf("refusals by node: %v: both nodes must have refused some", nodes)
		}
		if _, err := cb.CancelExecution(t.Context(), accepted[0].ID, api.CancelExecutionRequest{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("an enqueued line survives the SIGKILL of a node and its takeover", func(t *testing.T) {
		chat, err := ca.NewConversation(t.Context(), api.BusyPolicyEnqueue, nil)
		if err != nil {
			t.Fatal(err)
		}
		onA, onB := ca.Conversation(chat.Conversation), cb.Conversation(chat.Conversation)
		running := startTurn(t, onA, "running on a", needsApproval, "")
		awaitApproval(t, ca, running.ID)
		line := []api.Execution{
			startTurn(t, onA, "waiting on a", nil, ""),
			startTurn(t, onB, "waiting on b", nil, ""),
			startTurn(t, onA, "waiting on a again", nil, ""),
			startTurn(t, onB, "waiting on b again", nil, ""),
		}
		if w := line[3].WaitingFor; !slices.Equal(w, []string{running.ID, line[0].ID, line[1].ID, line[2].ID}) {
			t.Fatalf("the last waits for %v", w)
		}
		if err := a.srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-a.srv.exited

		prev, _ := finalState(t, cb, running.ID)
		if prev.State != api.ExecutionStateFailed || prev.Error == nil || prev.Error.Message != "Node a stopped before the execution finished" {
			t.Fatalf("the running one after a's kill: %s %+v", prev.State, prev.Error)
		}
		for _, exec := range line {
			done, _ := finalState(t, cb, exec.ID)
			if done.State != api.ExecutionStateSucceeded {
				t.Fatalf("%q ended %s, want succeeded", exec.Input, done.State)
			}
			startedAfterEnd(t, prev, done)
			prev = done
		}
	})

	t.Run("invariants: one terminal event each, nothing left queued", func(t *testing.T) {
		checkTurnInvariants(t, cb)
	})
	b.srv.stop(t)
}

// checkTurnInvariants reads every execution back (the listing, then each one's events):
// each is terminal, with exactly one terminal event, its last, agreeing with its state.
func checkTurnInvariants(t *testing.T, c *sdk.Client) {
	t.Helper()
	n := 0
	for exec, err := range c.AllExecutions(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if !exec.State.Terminal() {
			t.Errorf("%s (%q) is left %s", exec.ID, exec.Input, exec.State)
			continue
		}
		finalState(t, c, exec.ID) // one terminal event, last, agreeing with the state
	}
	t.Logf("%d executions, each terminal with one terminal event", n)
}

func jsonOf(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}
