package main

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/internal/a2atest"
	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Approvals through the real binary (docs/protocol.md, "Approvals"): the deadline of an action
// is in the store, so it is kept across a SIGKILL of the edge and a takeover by another node,
// and fails closed there; the inbox and the rules stay within their tenant.

// TestBinaryApprovalExpiryAcrossSIGKILLAndTakeover: an A2A input waits with an expiry. The edge is
// killed with SIGKILL while it waits; the edge started again on the same store answers it
// reject at its deadline (actor expiry), and the execution fails closed: the task is cancelled.
// Then on two nodes sharing PostgreSQL: the owner is killed while its execution waits, and the
// node that takes it over (the A2A provider resumes) expires it.
func TestBinaryApprovalExpiryAcrossSIGKILLAndTakeover(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)
	build := a2atest.Builds(t)[0]
	agent := build.Start(t)
	const timeout = "4s" // long enough that the kill certainly comes first (checked below)

	t.Run("SIGKILL", func(t *testing.T) {
		env := append(instanceEnv(t), "HARNESS_A2A_URL="+agent.URL, "HARNESS_ACTION_TIMEOUT="+timeout)
		edge := startCaddyWith(t, bin, env, "testdata/approvals-a2a.Caddyfile")
		exec, action := startAsk(t, edge.url)
		killWhileWaiting(t, edge, exec.ID)
		edge = startCaddyWith(t, bin, env, "testdata/approvals-a2a.Caddyfile")
		requireExpiredInput(t, edge.url, exec.ID, action)
		edge.stop(t)
	})

	t.Run("takeover", func(t *testing.T) {
		dsn := clusterDatabase(t)
		node := func(name string) *server {
			env := append(instanceEnv(t), "HARNESS_A2A_URL="+agent.URL, "HARNESS_ACTION_TIMEOUT="+timeout,
				"HARNESS_DATABASE_URL="+dsn, "HARNESS_NODE="+name)
			return startCaddyWith(t, bin, env, "testdata/approvals-cluster.Caddyfile")
		}
		a, b := node("a"), node("b")
		exec, action := startAsk(t, a.url)
		killWhileWaiting(t, a, exec.ID)
		requireExpiredInput(t, b.url, exec.ID, action)
		b.stop(t)
	})
}

// startAsk starts the A2A agent's input scenario and returns it once it waits, with its action.
func startAsk(t *testing.T, base string) (api.Execution, api.ActionRequest) {
	t.Helper()
	c := sdkClient(t, base)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	conv, err := c.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Run(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "a2a", Input: "ask"}, sdk.RunHandlers{})
	var pending *sdk.ActionRequiredError
	if !errors.As(err, &pending) || pending.Action.ExpiresAt == nil {
		t.Fatalf("Run: %v, want the input waiting with an expiresAt", err)
	}
	return pending.Execution, pending.Action
}

// killWhileWaiting SIGKILLs srv, having read that exec still waits (its action unanswered).
func killWhileWaiting(t *testing.T, srv *server, id string) {
	t.Helper()
	c := &client{t: t, base: srv.url}
	if state := c.get("/v1/executions/" + id)["state"]; state != string(api.ExecutionStateAwaitingInput) {
		t.Fatalf("before the kill the execution is %v: the action expired before the node was killed (raise the timeout)", state)
	}
	if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-srv.exited
}

// requireExpiredInput waits for exec to end at base and requires the expiry's answer: one
// action.responded, a reject by the actor expiry, and the execution failed closed.
func requireExpiredInput(t *testing.T, base, id string, action api.ActionRequest) {
	t.Helper()
	c := sdkClient(t, base)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	final, err := c.WaitForTerminal(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if final.State != api.ExecutionStateFailed || final.Error == nil ||
		!strings.HasSuffix(final.Error.Message, "was declined: No answer before the action expired at "+*action.ExpiresAt) {
		t.Fatalf("final %s %+v, want failed by the expiry", final.State, final.Error)
	}
	page, err := c.ListEvents(ctx, id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var answers []api.ActionRespondedData
	for _, e := range page.Events {
		if e.Type == api.StandardEventTypeActionResponded {
			answers = append(answers, typed(e.Data.AsActionRespondedData()))
		}
	}
	if len(answers) != 1 || answers[0].ActionID != action.ID || answers[0].Actor == nil || deref(answers[0].Actor.Kind) != api.ActorKindExpiry {
		t.Fatalf("answers %+v, want one by the actor expiry", answers)
	}
	if list, err := c.ListActions(ctx, nil); err != nil || len(list.Actions) != 0 {
		t.Fatalf("the inbox after the expiry: %+v %v", list.Actions, err)
	}
}

// TestBinaryApprovalsInboxUnderTwoTenants runs examples/tenants.Caddyfile: each user's inbox lists only
// that user's pending actions, another user's action and conversation answer 404 as unknown
// ones do, and a tenant's rule answers only that tenant's approvals.
func TestBinaryApprovalsInboxUnderTwoTenants(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)
	srv := startCaddyWith(t, bin, tenantsEnv(t, bin, 8), tenantsCaddyfile)
	alice := user{t: t, base: srv.url, name: "alice", password: passwords["alice"]}
	bob := user{t: t, base: srv.url, name: "bob", password: passwords["bob"]}

	waiting := func(u user) (string, string) {
		exec := u.start(u.conversation(), "from "+u.name, true, "")["id"].(string)
		action := typed(u.untilEvent(exec, api.StandardEventTypeActionRequired).AsActionRequest())
		return exec, action.ID
	}
	aliceExec, aliceAction := waiting(alice)
	bobExec, bobAction := waiting(bob)
	inbox := func(u user) []string {
		var out []string
		for _, item := range u.must(http.MethodGet, "/v1/actions", "", http.StatusOK)["actions"].([]any) {
			out = append(out, item.(map[string]any)["action"].(map[string]any)["id"].(string))
		}
		return out
	}
	if got := inbox(alice); len(got) != 1 || got[0] != aliceAction {
		t.Fatalf("alice's inbox %v, want only %s", got, aliceAction)
	}
	if got := inbox(bob); len(got) != 1 || got[0] != bobAction {
		t.Fatalf("bob's inbox %v, want only %s", got, bobAction)
	}
	// Bob cannot answer alice's action, nor put a rule on her conversation.
	bob.must(http.MethodPost, "/v1/executions/"+aliceExec+"/actions/"+aliceAction+":respond", `{"decision":"approve"}`, http.StatusNotFound)
	aliceConv := alice.must(http.MethodGet, "/v1/executions/"+aliceExec, "", http.StatusOK)["conversationId"].(string)
	bob.must(http.MethodPost, "/v1/action-rules", `{"conversationId":"`+aliceConv+`","match":{"title":"Approve mock *"},"decision":"approve"}`, http.StatusNotFound)

	// Alice's tenant rule answers her next approval, naming itself; bob's still waits.
	rule := alice.must(http.MethodPost, "/v1/action-rules", `{"match":{"title":"Approve mock *"},"decision":"approve"}`, http.StatusCreated)["id"].(string)
	bob.must(http.MethodGet, "/v1/action-rules/"+rule, "", http.StatusNotFound)
	next := alice.start(alice.conversation(), "answered by the rule", true, "")["id"].(string)
	responded := typed(alice.untilEvent(next, api.StandardEventTypeActionResponded).AsActionRespondedData())
	if responded.Actor == nil || responded.Actor.ID != rule || deref(responded.Actor.Kind) != api.ActorKindRule {
		t.Fatalf("action.responded %+v, want the rule %s as the actor", responded, rule)
	}
	if got := inbox(bob); len(got) != 1 || got[0] != bobAction {
		t.Fatalf("bob's inbox after alice's rule %v, want %s still waiting", got, bobAction)
	}
	// Answered from the inbox with a typed decision, by who answered.
	bob.must(http.MethodPost, "/v1/executions/"+bobExec+"/actions/"+bobAction+":respond", `{"decision":"reject","message":"not mine to run"}`, http.StatusOK)
	answer := typed(bob.untilEvent(bobExec, api.StandardEventTypeActionResponded).AsActionRespondedData())
	if answer.Actor == nil || answer.Actor.ID != "bob" || deref(answer.Decision) != api.DecisionReject || deref(answer.Message) != "not mine to run" {
		t.Fatalf("bob's answer recorded as %+v", answer)
	}
	if got := inbox(bob); len(got) != 0 {
		t.Fatalf("bob's inbox after answering %v", got)
	}
	srv.stop(t)
}

// sdkClient is the Go SDK against base, retrying quickly (a node may be restarting).
func sdkClient(t *testing.T, base string) *sdk.Client {
	t.Helper()
	c, err := sdk.New(base, sdk.WithRetry(sdk.RetryPolicy{MinWait: 50 * time.Millisecond, MaxWait: 500 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
