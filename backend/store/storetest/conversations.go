package storetest

import (
	"slices"
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// What the conversations listing reads (store.ConversationReader): a tenant's conversations,
// none of another tenant's, a rename read back whole, and for each conversation the number of
// its executions and its newest one, also after the newest is deleted.
func testConversations(t *testing.T, open func(t *testing.T) store.Store) {
	s := openStore(t, open)
	conv := func(n int, tenant string) store.Conversation {
		return store.Conversation{Tenant: tenant, Conversation: api.Conversation{
			ID: conversationID(n), CreatedAt: createdAt(n), Metadata: api.JSONObject{"n": float64(n)}}}
	}
	commit(t, s, &store.Batch{
		Conversations: []store.Conversation{conv(70, "alice"), conv(71, "alice"), conv(72, "bob"), conv(73, "alice")},
		Executions: []store.Execution{
			execution(80, 70, api.ExecutionStateSucceeded, "alice"),
			execution(81, 70, api.ExecutionStateSucceeded, "alice"),
			execution(82, 70, api.ExecutionStateRunning, "alice"),
			execution(83, 71, api.ExecutionStateFailed, "alice"),
			execution(84, 72, api.ExecutionStateSucceeded, "bob"),
		},
	})

	ids := func(tenant string, stopAfter int) []string {
		t.Helper()
		var out []string
		err := s.ForEachConversation(tenant, func(c store.Conversation) bool {
			if c.Tenant != tenant {
				t.Errorf("tenant %q's walk visits %s of tenant %q", tenant, c.ID, c.Tenant)
			}
			out = append(out, c.ID)
			return stopAfter == 0 || len(out) < stopAfter
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(out)
		return out
	}
	if got, want := ids("alice", 0), []string{conversationID(70), conversationID(71), conversationID(73)}; !slices.Equal(got, want) {
		t.Fatalf("alice's conversations = %v, want %v", got, want)
	}
	if got := ids("bob", 0); !slices.Equal(got, []string{conversationID(72)}) {
		t.Fatalf("bob's conversations = %v", got)
	}
	if got := ids("", 0); len(got) != 0 {
		t.Fatalf("the anonymous tenant sees %v, want none", got)
	}
	if got := ids("alice", 1); len(got) != 1 {
		t.Fatalf("a walk stopped after one visited %d", len(got))
	}

	activity := func(tenant string, n int) store.ConversationActivity {
		t.Helper()
		all, err := s.ConversationActivity(tenant, []string{conversationID(70), conversationID(71), conversationID(72), conversationID(73)})
		if err != nil {
			t.Fatal(err)
		}
		for id, a := range all {
			if a.Executions == 0 {
				t.Errorf("%s is in the answer with no executions", id)
			}
		}
		return all[conversationID(n)]
	}
	if a := activity("alice", 70); a.Executions != 3 || a.Latest == nil || a.Latest.Execution.ID != executionID(82) ||
		a.Latest.Execution.State != api.ExecutionStateRunning {
		t.Fatalf("conversation 70: %d executions, latest %+v; want 3 and %s running", a.Executions, a.Latest, executionID(82))
	}
	if a := activity("alice", 73); a.Executions != 0 || a.Latest != nil {
		t.Fatalf("a conversation without executions: %+v", a)
	}
	if a := activity("alice", 72); a.Executions != 0 || a.Latest != nil {
		t.Fatalf("alice reads bob's conversation's activity: %+v", a)
	}

	// A rename is a put of the whole record: read back with its title, its tenant kept.
	renamed := conv(71, "alice")
	title := "Trip to Lisbon"
	renamed.Title, renamed.Metadata = &title, api.JSONObject{"pinned": true}
	commit(t, s, &store.Batch{Conversations: []store.Conversation{renamed}})
	got, found, err := s.Conversation(conversationID(71))
	if err != nil || !found {
		t.Fatalf("Conversation after rename: found %v, %v", found, err)
	}
	sameJSON(t, "renamed conversation", got, renamed)
	var walked store.Conversation
	_ = s.ForEachConversation("alice", func(c store.Conversation) bool {
		if c.ID == conversationID(71) {
			walked = c
		}
		return true
	}, nil)
	sameJSON(t, "renamed conversation in the walk", walked, renamed)

	// The newest deleted (retention): the next newest is the latest, one fewer counted.
	newest := execution(82, 70, api.ExecutionStateRunning, "alice")
	commit(t, s, &store.Batch{Deletions: []store.Execution{newest}})
	if a := activity("alice", 70); a.Executions != 2 || a.Latest == nil || a.Latest.Execution.ID != executionID(81) {
		t.Fatalf("after deleting the newest: %d executions, latest %+v; want 2 and %s", a.Executions, a.Latest, executionID(81))
	}
}
