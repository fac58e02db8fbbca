package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/proxy"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// serveWithIdentity is serve with identities recorded: the basic authentication user of each
// request, as Caddy's `identity {http.auth.user.id}` behind basic_auth records it.
func serveWithIdentity(t *testing.T) string {
	t.Helper()
	rt, err := local.Open(t.TempDir(), backend.Options{Providers: []backend.Provider{mock.New()}})
	if err != nil {
		t.Fatal(err)
	}
	h := proxy.New(rt, proxy.Options{RetryHint: time.Millisecond, Actor: func(r *http.Request) string {
		user, _, _ := r.BasicAuth()
		return user
	}})
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Shutdown()
		hs.Close()
		_ = rt.Close()
	})
	return hs.URL
}

// TestWhoAnsweredAndCancelled: alice approves one execution with run --approve, bob cancels
// another; watch and get then say who did what.
func TestWhoAnsweredAndCancelled(t *testing.T) {
	base := serveWithIdentity(t)
	run := ctl(t, base, "", 0, "--user", "alice:secret", "run", "--approve", "--config", `{"requireApproval":true}`, "hi")
	run.expect(t, exitOK)
	approved := run.executionID(t)
	if !strings.Contains(run.stderr.String(), " was approved by alice\n") {
		t.Errorf("run --approve does not say who approved:\n%s", run.stderr.String())
	}

	c := sdkClient(t, base)
	conv, err := c.CreateConversation(t.Context(), api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	running, err := c.StartExecution(t.Context(), api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock",
		Input: "a b c d", Config: api.JSONObject{"delayMs": 10000}})
	if err != nil {
		t.Fatal(err)
	}
	cancelled := running.ID
	ctl(t, base, "", 0, "--user", "bob:secret", "cancel", cancelled).expect(t, exitOK)

	watch := ctl(t, base, "", 0, "watch", approved)
	watch.expect(t, exitOK)
	if !strings.Contains(watch.stderr.String(), " was approved by alice\n") {
		t.Errorf("watch of %s does not say who approved:\n%s", approved, watch.stderr.String())
	}
	watch = ctl(t, base, "", 0, "watch", cancelled)
	watch.expect(t, exitCancelled)
	if !strings.Contains(watch.stderr.String(), "harnessctl: execution "+cancelled+" cancelled by bob\n") {
		t.Errorf("watch of %s does not say who cancelled:\n%s", cancelled, watch.stderr.String())
	}

	for id, want := range map[string]string{approved: "approved by:   alice (action_", cancelled: "cancelled by:  bob ("} {
		get := ctl(t, base, "", 0, "get", id)
		get.expect(t, exitOK)
		if !strings.Contains(get.stdout.String(), "\n"+want) {
			t.Errorf("get %s lacks %q:\n%s", id, want, get.stdout.String())
		}
	}
}
