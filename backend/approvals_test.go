package backend_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Approvals (docs/protocol.md, "Approvals"): standing rules, expiry and the inbox, through a
// runtime on a bbolt file.

// askTool asks one approval about a tool (config title and toolKind; config input asks an input
// instead) and ends saying how it was answered.
func askTool(ctx context.Context, run *backend.Run) (backend.Result, error) {
	cfg := run.Config()
	kind := api.ActionKindApproval
	if cfg["input"] == true {
		kind = api.ActionKindInput
	}
	title, _ := cfg["title"].(string)
	toolKind, _ := cfg["toolKind"].(string)
	resp, err := run.RequestAction(ctx, backend.ActionInput{Kind: kind, Title: title, ToolKind: toolKind, Payload: api.JSONObject{}})
	if err != nil {
		return backend.Result{}, err
	}
	if resp.Approved != nil && *resp.Approved {
		return backend.Result{FinalOutput: "approved"}, nil
	}
	message := ""
	if resp.Message != nil {
		message = *resp.Message
	}
	return backend.Result{FinalOutput: "rejected: " + message}, nil
}

func as(t testing.TB, tenant string) context.Context {
	return backend.WithTenant(ctxT(t), backend.Tenant{ID: tenant})
}

// ask starts askTool in conv for the context's tenant and returns the execution.
func ask(t testing.TB, rt *backend.Runtime, ctx context.Context, conv, title, toolKind string) api.Execution {
	t.Helper()
	exec, _, err := rt.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv, ProviderID: "tool", Input: "x",
		Config: api.JSONObject{"title": title, "toolKind": toolKind}})
	if err != nil {
		t.Fatalf("StartExecution: %v", err)
	}
	return exec
}

// settle follows exec until it waits for an answer or ends, and returns what it did then. A
// rule's answer is committed with the question, so once action.required is seen the execution
// either waits or already goes on.
func settle(t testing.TB, rt *backend.Runtime, ctx context.Context, id string) ([]api.RuntimeEvent, api.Execution) {
	t.Helper()
	var events []api.RuntimeEvent
	for e, err := range backend.FollowExecution(ctx, rt, id, 0) {
		if err != nil {
			t.Fatalf("Follow: %v", err)
		}
		events = append(events, decode(t, e))
		if e.Type == api.StandardEventTypeActionRequired {
			exec, err := rt.GetExecution(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if exec.State == api.ExecutionStateAwaitingApproval || exec.State == api.ExecutionStateAwaitingInput {
				return events, exec
			}
		}
	}
	exec, err := rt.GetExecution(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return events, exec
}

// A rule answers a matching approval in the commit that records it, naming itself as the actor;
// a reject wins over an approve; revoked rules, other tenants' rules, other conversations' rules
// and input actions are left alone; configured rules apply to their tenants and cannot be
// revoked through the API.
func TestStandingRules(t *testing.T) {
	rt := openRuntime(t, "", backend.Options{
		Providers: []backend.Provider{&scripted{id: "tool", run: askTool}},
		Approvals: backend.ApprovalOptions{Rules: []backend.ConfiguredRule{{
			Tenants: []string{"carol"},
			Rule:    api.CreateActionRuleRequest{Match: api.ActionRuleMatch{ToolKind: ptr("delete")}, Decision: api.RuleDecisionReject, Message: ptr("never delete")},
		}}},
	})
	alice, bob, carol := as(t, "alice"), as(t, "bob"), as(t, "carol")
	conv := func(ctx context.Context) string {
		c, err := rt.CreateConversation(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	create := func(ctx context.Context, in api.CreateActionRuleRequest) api.ActionRule {
		t.Helper()
		r, err := rt.Approvals().CreateRule(ctx, in)
		if err != nil {
			t.Fatalf("CreateRule: %v", err)
		}
		return r
	}
	aliceX, aliceY, bobX := conv(alice), conv(alice), conv(bob)
	readRule := create(alice, api.CreateActionRuleRequest{Match: api.ActionRuleMatch{ToolKind: ptr("read")}, Decision: api.RuleDecisionApprove})
	execRule := create(alice, api.CreateActionRuleRequest{Match: api.ActionRuleMatch{ToolKind: ptr("execute")}, Decision: api.RuleDecisionApprove})
	denyRun := create(alice, api.CreateActionRuleRequest{ConversationID: &aliceX, Match: api.ActionRuleMatch{Title: ptr("Run rm *")},
		Decision: api.RuleDecisionReject, Message: ptr("not in this conversation")})
	fetchRule := create(alice, api.CreateActionRuleRequest{Match: api.ActionRuleMatch{ToolKind: ptr("fetch")}, Decision: api.RuleDecisionApprove})
	if _, err := rt.Approvals().RevokeRule(alice, fetchRule.ID); err != nil {
		t.Fatal(err)
	}
	configured, err := rt.Approvals().Rules(carol, "", true)
	if err != nil || len(configured) != 1 || configured[0].Source != api.ActionRuleSourceConfig {
		t.Fatalf("carol's rules: %+v %v", configured, err)
	}
	if _, err := rt.Approvals().RevokeRule(carol, configured[0].ID); backend.ErrorCode(err) != backend.CodeInvalidState {
		t.Fatalf("revoking a configured rule: %v, want INVALID_STATE", err)
	}

	for _, tc := range []struct {
		name        string
		ctx         context.Context
		conv        string
		title, kind string
		rule        string // the rule that answers; "" when the action waits
		output      string
	}{
		{"a tenant rule approves", alice, aliceY, "Read notes.txt", "read", readRule.ID, "approved"},
		{"another tenant's rule does not apply", bob, bobX, "Read notes.txt", "read", "", ""},
		{"the conversation's reject wins over the tenant's approve", alice, aliceX, "Run rm -rf /", "execute", denyRun.ID, "rejected: not in this conversation"},
		{"only in its conversation", alice, aliceY, "Run rm -rf /", "execute", execRule.ID, "approved"},
		{"a revoked rule answers nothing", alice, aliceY, "Fetch a page", "fetch", "", ""},
		{"nothing matches", alice, aliceY, "Move a file", "move", "", ""},
		{"a configured rule for its tenant", carol, conv(carol), "Delete a file", "delete", configured[0].ID, "rejected: never delete"},
		{"a configured rule not for this tenant", alice, aliceY, "Delete a file", "delete", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exec := ask(t, rt, tc.ctx, tc.conv, tc.title, tc.kind)
			events, final := settle(t, rt, tc.ctx, exec.ID)
			if tc.rule == "" {
				if final.State != api.ExecutionStateAwaitingApproval {
					t.Fatalf("state %s, want the action waiting (events %v)", final.State, types(events))
				}
				if _, err := rt.CancelExecution(tc.ctx, exec.ID, nil); err != nil {
					t.Fatal(err)
				}
				return
			}
			if final.State != api.ExecutionStateSucceeded || *final.FinalOutput != tc.output {
				t.Fatalf("final %s %v, want %q", final.State, final.FinalOutput, tc.output)
			}
			want := []api.StandardEventType{"run.queued", "run.started", "action.required", "action.responded"}
			if got := types(events); len(got) < 4 || !slices.Equal(got[:4], want) || events[2].Sequence+1 != events[3].Sequence {
				t.Fatalf("events %v, want the answer right after the question", got)
			}
			data := typed(events[3].Data.AsActionRespondedData())
			if data.Actor == nil || data.Actor.ID != tc.rule || *data.Actor.Kind != api.ActorKindRule || data.Decision == nil {
				t.Fatalf("action.responded %+v, want actor rule %s", data, tc.rule)
			}
		})
	}
	t.Run("an input is never answered by a rule", func(t *testing.T) {
		create(alice, api.CreateActionRuleRequest{Match: api.ActionRuleMatch{Title: ptr("Provide *")}, Decision: api.RuleDecisionApprove})
		exec, _, err := rt.StartExecution(alice, api.StartExecutionRequest{ConversationID: aliceY, ProviderID: "tool", Input: "x",
			Config: api.JSONObject{"title": "Provide a name", "input": true}})
		if err != nil {
			t.Fatal(err)
		}
		if _, final := settle(t, rt, alice, exec.ID); final.State != api.ExecutionStateAwaitingInput {
			t.Fatalf("state %s", final.State)
		}
	})
}

// A rule that cannot be is refused with a pointer into the body; an unknown (or another
// tenant's) conversation is NOT_FOUND.
func TestRuleValidation(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	bobsConv, err := rt.CreateConversation(as(t, "bob"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, pointer, suggestion string
		in                        api.CreateActionRuleRequest
		code                      backend.Code
	}{
		{"matches nothing nameable", "/match", "", api.CreateActionRuleRequest{Decision: api.RuleDecisionApprove}, backend.CodeValidation},
		{"only stars", "/match", "", api.CreateActionRuleRequest{Match: api.ActionRuleMatch{Title: ptr("**")}, Decision: api.RuleDecisionApprove}, backend.CodeValidation},
		{"a provider alone", "/match", "", api.CreateActionRuleRequest{Match: api.ActionRuleMatch{ProviderID: ptr("mock")}, Decision: api.RuleDecisionApprove}, backend.CodeValidation},
		{"an unknown tool kind", "/match/toolKind", "execute", api.CreateActionRuleRequest{Match: api.ActionRuleMatch{ToolKind: ptr("exec")}, Decision: api.RuleDecisionApprove}, backend.CodeValidation},
		{"an unknown provider", "/match/providerId", "", api.CreateActionRuleRequest{Match: api.ActionRuleMatch{ProviderID: ptr("nope"), ToolKind: ptr("read")}, Decision: api.RuleDecisionApprove}, backend.CodeValidation},
		{"a stray backslash", "/match/title", "", api.CreateActionRuleRequest{Match: api.ActionRuleMatch{Title: ptr(`Run \d`)}, Decision: api.RuleDecisionApprove}, backend.CodeValidation},
		{"an unknown decision", "/decision", "", api.CreateActionRuleRequest{Match: api.ActionRuleMatch{ToolKind: ptr("read")}, Decision: "maybe"}, backend.CodeValidation},
		{"another tenant's conversation", "", "", api.CreateActionRuleRequest{ConversationID: &bobsConv.ID, Match: api.ActionRuleMatch{ToolKind: ptr("read")}, Decision: api.RuleDecisionApprove}, backend.CodeNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rt.Approvals().CreateRule(as(t, "alice"), tc.in)
			var be *backend.Error
			if !errors.As(err, &be) || be.Code != tc.code {
				t.Fatalf("%v, want %s", err, tc.code)
			}
			if tc.pointer == "" {
				return
			}
			field := be.Details["errors"].([]any)[0].(map[string]any)
			if field["pointer"] != tc.pointer || (tc.suggestion != "" && field["suggestion"] != tc.suggestion) {
				t.Fatalf("details %v, want pointer %s suggestion %q", field, tc.pointer, tc.suggestion)
			}
		})
	}
	if rules, err := rt.Approvals().Rules(as(t, "alice"), "", false); err != nil || len(rules) != 0 {
		t.Fatalf("refused rules were kept: %+v %v", rules, err)
	}
	// A configured rule that cannot be fails Open.
	_, err = local.Open(t.TempDir(), backend.Options{Approvals: backend.ApprovalOptions{Rules: []backend.ConfiguredRule{{
		Rule: api.CreateActionRuleRequest{Decision: api.RuleDecisionApprove}}}}})
	if err == nil || !strings.Contains(err.Error(), "action_rule 1") {
		t.Fatalf("Open with a rule matching nothing nameable: %v", err)
	}
}

// An action expires: answered reject by the actor expiry at its expiresAt (the provider's
// default, or the start's own), and the mock fails closed; the deadline is in the store, so a
// resumed execution's action expires after a restart; an expiry in the past or years away is
// refused.
func TestExpiry(t *testing.T) {
	dir := t.TempDir()
	p := &resumable{scripted: scripted{id: "resumable", run: firstRun}, resume: resumeRun}
	opts := backend.Options{
		Providers: []backend.Provider{mock.New(), p},
		Approvals: backend.ApprovalOptions{Timeouts: map[string]time.Duration{"resumable": time.Second, "": time.Hour}},
	}
	rt := openRuntime(t, dir, opts)
	conv := newConversation(t, rt)
	one := 1
	approval := api.JSONObject{"requireApproval": true}

	for _, tc := range []struct {
		name    string
		timeout *int
		want    time.Duration // the action's time to answer
	}{
		{"the start's own", &one, time.Second},
		{"the default of every provider", nil, time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := startReq(conv, startOpts{input: "x", config: approval})
			req.ActionTimeoutSeconds = tc.timeout
			exec, _, err := rt.StartExecution(ctxT(t), req)
			if err != nil {
				t.Fatal(err)
			}
			action := typed(waitForEvent(t, rt, exec.ID, api.StandardEventTypeActionRequired).Data.AsActionRequest())
			created, _ := time.Parse(time.RFC3339, action.CreatedAt)
			expires, _ := time.Parse(time.RFC3339, deref(action.ExpiresAt))
			if expires.Sub(created) != tc.want {
				t.Fatalf("expiresAt %v, createdAt %s: want %v later", action.ExpiresAt, action.CreatedAt, tc.want)
			}
			if tc.want > time.Minute {
				if _, err := rt.CancelExecution(ctxT(t), exec.ID, nil); err != nil {
					t.Fatal(err)
				}
				return
			}
			events := wantFailed(t, rt, exec.ID, "Mock execution was not approved: No answer before the action expired at "+*action.ExpiresAt)
			requireExpired(t, events)
		})
	}

	t.Run("across a restart", func(t *testing.T) {
		exec := start(t, rt, conv, startOpts{provider: "resumable", input: "ask"})
		waitForEvent(t, rt, exec.ID, api.StandardEventTypeActionRequired)
		if err := rt.Close(); err != nil {
			t.Fatal(err)
		}
		rt2 := openRuntime(t, dir, opts)
		events, final := finalOf(t, rt2, exec.ID)
		if final.State != api.ExecutionStateSucceeded {
			t.Fatalf("final %s", final.State)
		}
		requireExpired(t, events)
	})

	t.Run("refused", func(t *testing.T) {
		rt := openRuntime(t, "", optsNone())
		conv := newConversation(t, rt)
		for _, seconds := range []int{0, -5, 30*24*3600 + 1} {
			req := startReq(conv, startOpts{input: "x"})
			req.ActionTimeoutSeconds = &seconds
			_, _, err := rt.StartExecution(ctxT(t), req)
			var be *backend.Error
			if !errors.As(err, &be) || be.Code != backend.CodeValidation || be.Details["errors"].([]any)[0].(map[string]any)["pointer"] != "/actionTimeoutSeconds" {
				t.Fatalf("actionTimeoutSeconds %d: %v", seconds, err)
			}
		}
	})
}

// requireExpired: the log holds one answer, a reject by the actor expiry.
func requireExpired(t *testing.T, events []api.RuntimeEvent) {
	t.Helper()
	var answers []api.ActionRespondedData
	for _, e := range events {
		if e.Type == api.StandardEventTypeActionResponded {
			answers = append(answers, typed(e.Data.AsActionRespondedData()))
		}
	}
	if len(answers) != 1 || answers[0].Actor == nil || answers[0].Actor.Kind == nil || *answers[0].Actor.Kind != api.ActorKindExpiry ||
		deref(answers[0].Decision) != api.DecisionReject || answers[0].Approved == nil || *answers[0].Approved {
		t.Fatalf("answers %+v, want one reject by the actor expiry", answers)
	}
}

// The inbox: a tenant's pending actions across executions, oldest first, filtered, paged; an
// answered action leaves it; another tenant's never appear.
func TestInbox(t *testing.T) {
	rt := openRuntime(t, "", backend.Options{Providers: []backend.Provider{mock.New(), &scripted{id: "tool", run: askTool}}})
	alice, bob := as(t, "alice"), as(t, "bob")
	convA, _ := rt.CreateConversation(alice, nil)
	convB, _ := rt.CreateConversation(alice, nil)
	convBob, _ := rt.CreateConversation(bob, nil)
	var ids []string // alice's, in creation order
	for _, s := range []struct {
		ctx      context.Context
		conv     string
		provider string
	}{{alice, convA.ID, "mock"}, {alice, convB.ID, "tool"}, {bob, convBob.ID, "mock"}, {alice, convA.ID, "tool"}} {
		exec, _, err := rt.StartExecution(s.ctx, api.StartExecutionRequest{ConversationID: s.conv, ProviderID: s.provider, Input: "x",
			Config: api.JSONObject{"requireApproval": true, "title": "May I?"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, final := settle(t, rt, s.ctx, exec.ID); final.State != api.ExecutionStateAwaitingApproval {
			t.Fatalf("state %s", final.State)
		}
		if s.ctx == alice {
			ids = append(ids, exec.ID)
		}
	}
	pending := func(ctx context.Context, f backend.ActionFilter) []string {
		t.Helper()
		page, err := rt.Approvals().Pending(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, a := range page.Actions {
			out = append(out, a.Action.ExecutionID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		f    backend.ActionFilter
		want []string
	}{
		{"alice's, oldest first", alice, backend.ActionFilter{}, ids},
		{"by provider", alice, backend.ActionFilter{ProviderID: "tool"}, []string{ids[1], ids[2]}},
		{"by conversation", alice, backend.ActionFilter{ConversationID: convA.ID}, []string{ids[0], ids[2]}},
		{"nobody else's", as(t, "carol"), backend.ActionFilter{}, nil},
	} {
		if got := pending(tc.ctx, tc.f); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	first, err := rt.Approvals().Pending(alice, backend.ActionFilter{Limit: 2})
	if err != nil || len(first.Actions) != 2 || first.NextCursor == "" || first.Actions[0].ConversationID != convA.ID || first.Actions[0].ProviderID != "mock" {
		t.Fatalf("first page %+v %v", first, err)
	}
	if rest := pending(alice, backend.ActionFilter{Limit: 2, After: first.NextCursor}); !slices.Equal(rest, ids[2:]) {
		t.Fatalf("second page %v, want %v", rest, ids[2:])
	}
	if _, err := rt.Approvals().Pending(alice, backend.ActionFilter{After: "not a cursor"}); !errors.Is(err, backend.ErrListAfter) {
		t.Fatalf("a bad cursor: %v", err)
	}
	if _, err := rt.RespondToAction(alice, ids[0], first.Actions[0].Action.ID, approve(true)); err != nil {
		t.Fatal(err)
	}
	if got := pending(alice, backend.ActionFilter{}); !slices.Equal(got, ids[1:]) {
		t.Fatalf("after an answer: %v, want %v", got, ids[1:])
	}
}

func ptr[T any](v T) *T { return &v }

// Between people answering and the expiry exactly one answer wins, as between two people: each
// round, answers race the action's deadline (sent from just before it until after it); the log
// holds one action.responded, by whoever won, every other answer is ACTION_ALREADY_RESOLVED,
// and the execution ends as the winner said. Which side wins varies; the rule holds either way.
func TestExpiryRacesPeopleWithOneWinner(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	conv := newConversation(t, rt)
	one := 1
	won := map[string]int{}
	for round := range 6 {
		req := startReq(conv, startOpts{input: "race", config: api.JSONObject{"requireApproval": true}})
		req.ActionTimeoutSeconds = &one
		exec, _, err := rt.StartExecution(ctxT(t), req)
		if err != nil {
			t.Fatal(err)
		}
		action := typed(waitForEvent(t, rt, exec.ID, api.StandardEventTypeActionRequired).Data.AsActionRequest())
		expires, err := time.Parse(time.RFC3339Nano, deref(action.ExpiresAt))
		if err != nil {
			t.Fatal(err)
		}
		// Spread the people's answers around the deadline: the later rounds start later.
		time.Sleep(time.Until(expires.Add(time.Duration(round-3) * 15 * time.Millisecond)))
		const people = 4
		results := make(chan error, people)
		for range people {
			go func() {
				_, err := rt.RespondToAction(ctxT(t), exec.ID, action.ID, approve(true))
				results <- err
			}()
		}
		accepted := 0
		for range people {
			switch err := <-results; {
			case err == nil:
				accepted++
			case backend.ErrorCode(err) != backend.CodeActionAlreadyResolved && backend.ErrorCode(err) != backend.CodeActionNotFound:
				t.Fatalf("round %d: an answer failed with %v, want ACTION_ALREADY_RESOLVED", round, err)
			}
		}
		events, final := finalOf(t, rt, exec.ID)
		var answers []api.ActionRespondedData
		for _, e := range events {
			if e.Type == api.StandardEventTypeActionResponded {
				answers = append(answers, typed(e.Data.AsActionRespondedData()))
			}
		}
		if len(answers) != 1 {
			t.Fatalf("round %d: %d answers recorded (%+v), want exactly one", round, len(answers), answers)
		}
		kind := api.ActorKind("person") // without identity a person's answer names no actor
		if answers[0].Actor != nil {
			kind = deref(answers[0].Actor.Kind)
		}
		switch {
		case kind == api.ActorKindExpiry && accepted == 0 && final.State == api.ExecutionStateFailed:
		case kind != api.ActorKindExpiry && accepted == 1 && final.State == api.ExecutionStateSucceeded:
		default:
			t.Fatalf("round %d: the answer recorded is by %s, %d people were told theirs was taken, the execution %s", round, kind, accepted, final.State)
		}
		won[string(kind)]++
	}
	t.Logf("winners over the rounds: %v", won)
}
