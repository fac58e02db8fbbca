package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// TestBinaryDeleteIsTheTenantsOwn runs examples/tenants.Caddyfile on bbolt: bob's DELETE of
// alice's conversation answers 404 exactly as an unknown id does and erases nothing; alice's
// erases it; bob's own conversation, and his listing, are untouched.
func TestBinaryDeleteIsTheTenantsOwn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)
	srv := startCaddyWith(t, bin, tenantsEnv(t, bin, 8), tenantsCaddyfile)
	alice := user{t: t, base: srv.url, name: "alice", password: passwords["alice"]}
	bob := user{t: t, base: srv.url, name: "bob", password: passwords["bob"]}

	hers, his := alice.conversation(), bob.conversation()
	run := alice.start(hers, "hers alone", false, "")["id"].(string)
	alice.untilEvent(run, api.StandardEventTypeRunCompleted)

	foreign := bob.must(http.MethodDelete, "/v1/conversations/"+hers, "", http.StatusNotFound)
	unknown := bob.must(http.MethodDelete, "/v1/conversations/conv_00000000000000000000000000000000", "", http.StatusNotFound)
	if foreign["code"] != unknown["code"] || !strings.HasPrefix(foreign["message"].(string), "Conversation not found: ") {
		t.Fatalf("bob's delete of alice's conversation: %v; of an unknown one: %v", foreign, unknown)
	}
	alice.must(http.MethodGet, "/v1/conversations/"+hers, "", http.StatusOK)

	if d := alice.must(http.MethodDelete, "/v1/conversations/"+hers, "", http.StatusOK); d["executions"] != float64(1) {
		t.Fatalf("alice's delete: %v", d)
	}
	alice.must(http.MethodGet, "/v1/executions/"+run, "", http.StatusNotFound)
	bob.must(http.MethodGet, "/v1/conversations/"+his, "", http.StatusOK)
	list := bob.must(http.MethodGet, "/v1/conversations", "", http.StatusOK)["conversations"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["id"] != his {
		t.Fatalf("bob's listing after alice's delete: %v", list)
	}
	srv.stop(t)
}
