package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// pendingAction is an action of execution exec, created at createdAt(n), expiring at
// createdAt(expires) when expires > 0. origin says whether the record names its tenant,
// conversation and provider (records written before the inbox did not).
func pendingAction(n int, exec store.Execution, expires int, origin bool) store.Action {
	a := store.Action{
		Request: api.ActionRequest{
			ID: actionID(n), ExecutionID: exec.Execution.ID, Kind: api.ActionKindApproval,
			Title: "May I?", Payload: api.JSONObject{}, CreatedAt: createdAt(n),
		},
		Status: store.ActionPending,
	}
	if expires > 0 {
		at := createdAt(expires)
		a.Request.ExpiresAt = &at
	}
	if origin {
		a.Tenant, a.ConversationID, a.ProviderID = exec.Tenant, exec.Execution.ConversationID, exec.Execution.ProviderID
	}
	return a
}

func actionIDs(actions []store.Action) []string {
	out := make([]string, len(actions))
	for i, a := range actions {
		out[i] = a.Request.ID
	}
	return out
}

// The inbox: a tenant's pending actions, oldest first, filtered and paged; an action leaves it
// in the commit that resolves or abandons it, and with its execution's deletion. A record that
// does not name its origin is listed under its execution's.
func testPendingActions(t *testing.T, open func(t *testing.T) store.Store) {
	s := openStore(t, open)
	alice1 := execution(201, 21, api.ExecutionStateAwaitingApproval, "alice")
	alice2 := execution(202, 22, api.ExecutionStateAwaitingApproval, "alice")
	alice2.Execution.ProviderID = "acp"
	bob := execution(203, 21, api.ExecutionStateAwaitingApproval, "bob")
	legacy := execution(204, 23, api.ExecutionStateAwaitingApproval, "alice")
	b := &store.Batch{Executions: []store.Execution{alice1, alice2, bob, legacy}}
	// Created out of order, so the order is the store's.
	b.Actions = []store.Action{
		pendingAction(305, alice1, 0, true), pendingAction(301, alice2, 0, true), pendingAction(303, alice1, 0, true),
		pendingAction(302, bob, 0, true), pendingAction(304, legacy, 0, false),
	}
	commit(t, s, b)

	list := func(q store.ActionQuery) []string {
		t.Helper()
		if q.Limit == 0 {
			q.Limit = 50
		}
		got, next, err := s.PendingActions(q)
		if err != nil {
			t.Fatal(err)
		}
		if next != nil {
			t.Fatalf("PendingActions(%+v): a next page after %v", q, actionIDs(got))
		}
		return actionIDs(got)
	}
	for _, c := range []struct {
		name string
		q    store.ActionQuery
		want []string
	}{
		{"alice, oldest first", store.ActionQuery{Tenant: "alice"}, []string{actionID(301), actionID(303), actionID(304), actionID(305)}},
		{"bob sees only his", store.ActionQuery{Tenant: "bob"}, []string{actionID(302)}},
		{"anonymous sees nothing", store.ActionQuery{}, []string{}},
		{"by provider", store.ActionQuery{Tenant: "alice", ProviderID: "acp"}, []string{actionID(301)}},
		{"by conversation", store.ActionQuery{Tenant: "alice", ConversationID: conversationID(21)}, []string{actionID(303), actionID(305)}},
		{"legacy record by its execution's conversation", store.ActionQuery{Tenant: "alice", ConversationID: conversationID(23)}, []string{actionID(304)}},
	} {
		if got := list(c.q); !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	got, _, err := s.PendingActions(store.ActionQuery{Tenant: "alice", ProviderID: "acp", Limit: 1})
	if err != nil || len(got) != 1 || got[0].Tenant != "alice" || got[0].ConversationID != conversationID(22) || got[0].ProviderID != "acp" {
		t.Fatalf("a listed action names its origin: %+v, %v", got, err)
	}
	if got, _, _ := s.PendingActions(store.ActionQuery{Tenant: "alice", ConversationID: conversationID(23), Limit: 1}); len(got) != 1 || got[0].Tenant != "alice" || got[0].ProviderID != "mock" {
		t.Fatalf("a legacy record is listed with its execution's origin: %+v", got)
	}

	// Pages of 2 over alice's 4, each continuing after the previous one.
	var paged []string
	var after *store.ListPosition
	for page := 0; page < 3; page++ {
		got, next, err := s.PendingActions(store.ActionQuery{Tenant: "alice", Limit: 2, After: after})
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, actionIDs(got)...)
		if next == nil {
			break
		}
		if *next != store.ActionPositionOf(got[len(got)-1]) {
			t.Fatalf("page %d: next %+v is not its last action's position", page, *next)
		}
		after = next
	}
	if want := list(store.ActionQuery{Tenant: "alice"}); !slices.Equal(paged, want) {
		t.Fatalf("paged %v, want %v", paged, want)
	}

	// Resolved, abandoned (without the origin members, as recovery may write it) and deleted
	// actions leave the inbox.
	resolved := pendingAction(301, alice2, 0, true)
	resolved.Status = store.ActionResolved
	abandoned := pendingAction(303, alice1, 0, false)
	abandoned.Status = store.ActionAbandoned
	commit(t, s, &store.Batch{Actions: []store.Action{resolved, abandoned}})
	legacy.ActionIDs = []string{actionID(304)}
	commit(t, s, &store.Batch{Deletions: []store.Execution{legacy}})
	if got, want := list(store.ActionQuery{Tenant: "alice"}), []string{actionID(305)}; !slices.Equal(got, want) {
		t.Fatalf("after resolving, abandoning and deleting: %v, want %v", got, want)
	}
	if rec, found, err := s.Action(actionID(301)); err != nil || !found || rec.Status != store.ActionResolved {
		t.Fatalf("the resolved record is kept: %+v %v %v", rec, found, err)
	}
}

// DueActions: the pending actions past their deadline, earliest first, at most limit, and the
// next deadline; answered ones are gone.
func testDueActions(t *testing.T, open func(t *testing.T) store.Store) {
	s := openStore(t, open)
	exec := execution(210, 24, api.ExecutionStateAwaitingApproval, "alice")
	other := execution(211, 24, api.ExecutionStateAwaitingApproval, "bob")
	commit(t, s, &store.Batch{Executions: []store.Execution{exec, other}, Actions: []store.Action{
		pendingAction(311, exec, 40, true), pendingAction(312, other, 30, true), pendingAction(313, exec, 50, true),
		pendingAction(314, exec, 0, true), // no deadline
	}})
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }
	for _, c := range []struct {
		name  string
		now   int
		limit int
		due   []string
		next  time.Time
	}{
		{"none due", 10, 10, nil, at(30)},
		{"one due, to the millisecond", 30, 10, []string{actionID(312)}, at(40)},
		{"two due, earliest first", 45, 10, []string{actionID(312), actionID(311)}, at(50)},
		{"cut by limit: the next is due already", 60, 1, []string{actionID(312)}, time.Time{}},
		{"all due", 60, 10, []string{actionID(312), actionID(311), actionID(313)}, time.Time{}},
	} {
		due, next, err := s.DueActions(at(c.now), c.limit)
		if err != nil {
			t.Fatal(err)
		}
		if got := actionIDs(due); !slices.Equal(got, c.due) && !(len(got) == 0 && len(c.due) == 0) {
			t.Errorf("%s: due %v, want %v", c.name, got, c.due)
		}
		if cut := len(due) == c.limit; cut && (next.IsZero() || next.After(at(c.now))) {
			t.Errorf("%s: next %v, want a time at or before now (more are due)", c.name, next)
		} else if !cut && !next.Equal(c.next) {
			t.Errorf("%s: next %v, want %v", c.name, next, c.next)
		}
	}
	answered := pendingAction(312, other, 30, true)
	answered.Status = store.ActionResolved
	commit(t, s, &store.Batch{Actions: []store.Action{answered}})
	due, next, err := s.DueActions(at(45), 10)
	if err != nil || !slices.Equal(actionIDs(due), []string{actionID(311)}) || !next.Equal(at(50)) {
		t.Fatalf("after an answer: due %v next %v (%v), want [%s] and %v", actionIDs(due), next, err, actionID(311), at(50))
	}
}

func rule(n int, tenant, conversation string, at int) store.Rule {
	r := store.Rule{
		ActionRule: api.ActionRule{
			ID: ruleID(n), Scope: api.ActionRuleScopeTenant, Decision: api.RuleDecisionApprove,
			Source: api.ActionRuleSourceAPI, CreatedAt: createdAt(at), Match: api.ActionRuleMatch{ToolKind: ptr("read")},
		},
		Tenant: tenant,
	}
	if conversation != "" {
		r.ConversationID = ptr(conversation)
		r.Scope = api.ActionRuleScopeConversation
	}
	return r
}

func ruleID(n int) string { return "rule_" + executionID(n)[len("exec_"):] }

func ptr[T any](v T) *T { return &v }

// Rules: by id, by tenant (oldest first), by conversation (its own and the tenant-wide ones);
// a revocation rewrites the rule and keeps it.
func testRules(t *testing.T, open func(t *testing.T) store.Store) {
	s := openStore(t, open)
	conv := conversationID(25)
	commit(t, s, &store.Batch{Rules: []store.Rule{
		rule(3, "alice", conv, 3), rule(1, "alice", "", 1), rule(2, "bob", "", 2),
		rule(4, "alice", conversationID(26), 4), rule(5, "", "", 5),
	}})
	ids := func(rules []store.Rule) []string {
		out := []string{}
		for _, r := range rules {
			out = append(out, r.ID)
		}
		return out
	}
	for _, c := range []struct {
		tenant, conversation string
		want                 []string
	}{
		{"alice", "", []string{ruleID(1), ruleID(3), ruleID(4)}},
		{"alice", conv, []string{ruleID(1), ruleID(3)}},
		{"bob", conv, []string{ruleID(2)}},
		{"", "", []string{ruleID(5)}},
		{"carol", "", []string{}},
	} {
		got, err := s.Rules(c.tenant, c.conversation)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(got), c.want) {
			t.Errorf("Rules(%q, %q) = %v, want %v", c.tenant, c.conversation, ids(got), c.want)
		}
	}
	revoked := rule(3, "alice", conv, 3)
	revoked.RevokedAt = ptr(createdAt(9))
	revoked.RevokedBy = &api.Actor{ID: "alice"}
	commit(t, s, &store.Batch{Rules: []store.Rule{revoked}})
	got, found, err := s.Rule(ruleID(3))
	if err != nil || !found {
		t.Fatalf("Rule: %v %v", found, err)
	}
	sameJSON(t, "the revoked rule", got, revoked)
	if all, _ := s.Rules("alice", conv); len(all) != 2 || all[1].RevokedAt == nil {
		t.Fatalf("a revoked rule is still listed, revoked: %+v", all)
	}
	if _, found, err := s.Rule(ruleID(99)); found || err != nil {
		t.Fatalf("an unknown rule: %v %v", found, err)
	}
}
