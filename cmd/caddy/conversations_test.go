package main

import (
	"net/http"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// TestBinaryListsAndRenamesConversationsUnderTenants runs examples/tenants.Caddyfile on its
// bbolt store: each user lists only their conversations, most recently active first, renames
// one (bob's rename of it is a 404), and the title and the order are still there after a
// restart of the binary on the same data directory.
func TestBinaryListsAndRenamesConversationsUnderTenants(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)
	env := tenantsEnv(t, bin, 8)
	srv := startCaddyWith(t, bin, env, tenantsCaddyfile)
	alice := user{t: t, base: srv.url, name: "alice", password: passwords["alice"]}
	bob := user{t: t, base: srv.url, name: "bob", password: passwords["bob"]}

	older, newer := alice.conversation(), alice.conversation()
	bobs := bob.conversation()
	run := alice.start(older, "plan the trip", false, "")["id"].(string)
	alice.untilEvent(run, api.StandardEventTypeRunCompleted)
	alice.must(http.MethodPatch, "/v1/conversations/"+older, `{"title":"Trip to Lisbon"}`, http.StatusOK)
	bob.must(http.MethodPatch, "/v1/conversations/"+older, `{"title":"mine"}`, http.StatusNotFound)
	bob.must(http.MethodPatch, "/v1/conversations/"+bobs, `{"title":5}`, http.StatusBadRequest)

	check := func(when string) {
		t.Helper()
		list := alice.must(http.MethodGet, "/v1/conversations?limit=10", "", http.StatusOK)["conversations"].([]any)
		if len(list) != 2 {
			t.Fatalf("%s: alice lists %d conversations, want 2: %v", when, len(list), list)
		}
		first, second := list[0].(map[string]any), list[1].(map[string]any)
		if first["id"] != older || first["title"] != "Trip to Lisbon" || first["executionCount"] != float64(1) ||
			first["latestExecution"].(map[string]any)["state"] != "succeeded" || second["id"] != newer {
			t.Fatalf("%s: alice's list %v; want %s (renamed, ran last) then %s", when, list, older, newer)
		}
		bobList := bob.must(http.MethodGet, "/v1/conversations", "", http.StatusOK)["conversations"].([]any)
		if len(bobList) != 1 || bobList[0].(map[string]any)["id"] != bobs {
			t.Fatalf("%s: bob lists %v, want only %s", when, bobList, bobs)
		}
	}
	check("before the restart")
	srv.stop(t)
	srv = startCaddyWith(t, bin, env, tenantsCaddyfile)
	alice.base, bob.base = srv.url, srv.url
	check("after the restart")
	srv.stop(t)
}
