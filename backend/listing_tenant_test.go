package backend_test

import (
	"slices"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
)

// A listing never leaves the caller's tenant: alice sees only hers, bob only his, the anonymous
// tenant only what was created without a tenant; another tenant's conversation is NOT_FOUND.
func TestListingStaysInTheTenant(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	alice, bob, anon := asTenant(t, "alice", 0), asTenant(t, "bob", 0), ctxT(t)
	aliceConv := conversationAs(t, alice, rt)
	bobConv := conversationAs(t, bob, rt)
	anonConv := conversationAs(t, anon, rt)
	want := map[string][]string{}
	for i := 0; i < 3; i++ {
		want["alice"] = append(want["alice"], startAs(t, alice, rt, aliceConv, startOpts{}).ID)
	}
	want["bob"] = append(want["bob"], startAs(t, bob, rt, bobConv, startOpts{}).ID)
	want["anon"] = append(want["anon"], startAs(t, anon, rt, anonConv, startOpts{}).ID)

	check := func(name string, got []string) {
		t.Helper()
		w := slices.Clone(want[name])
		slices.Sort(w)
		slices.Sort(got)
		if !slices.Equal(got, w) {
			t.Errorf("%s lists %v, want %v", name, got, w)
		}
	}
	for _, c := range []struct {
		name string
		page func(f backend.ExecutionFilter) (backend.ExecutionPage, error)
	}{
		{"alice", func(f backend.ExecutionFilter) (backend.ExecutionPage, error) { return rt.ListExecutions(alice, f) }},
		{"bob", func(f backend.ExecutionFilter) (backend.ExecutionPage, error) { return rt.ListExecutions(bob, f) }},
		{"anon", func(f backend.ExecutionFilter) (backend.ExecutionPage, error) { return rt.ListExecutions(anon, f) }},
	} {
		var got []string
		f := backend.ExecutionFilter{Limit: 1} // one per page: paging must not cross tenants either
		for {
			page, err := c.page(f)
			if err != nil {
				t.Fatalf("%s: ListExecutions: %v", c.name, err)
			}
			got = append(got, ids(page.Executions)...)
			if page.NextCursor == "" {
				break
			}
			f.After = page.NextCursor
		}
		check(c.name, got)
	}
	if _, err := rt.ListExecutions(bob, backend.ExecutionFilter{ConversationID: aliceConv}); backend.ErrorCode(err) != backend.CodeNotFound {
		t.Errorf("bob listing alice's conversation: %v, want NOT_FOUND", err)
	}
}
