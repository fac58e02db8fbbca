package caddymodule

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddytest"

	"github.com/harness-edge/harness-edge/sdk/api"
)

func TestAdaptTenantSettings(t *testing.T) {
	caddytest.AssertAdapt(t, `
:4310 {
	harness {
		tenant {http.auth.user.id}
		max_running 4
	}
}
`, "caddyfile", `{
	"apps": {
		"http": {
			"servers": {
				"srv0": {
					"listen": [
						":4310"
					],
					"routes": [
						{
							"handle": [
								{
									"handler": "harness",
									"max_running": 4,
									"tenant": "{http.auth.user.id}"
								}
							]
						}
					]
				}
			}
		}
	}
}`)
}

func TestTenantSettingErrors(t *testing.T) {
	for name, tc := range map[string]struct{ body, want string }{
		"tenant without value":   {"harness {\n tenant\n}", "wrong argument count"},
		"tenant with two values": {"harness {\n tenant {a} {b}\n}", "wrong argument count"},
		"max_running negative":   {"harness {\n max_running -1\n}", `max_running: "-1" is not a non-negative integer`},
		"max_running not number": {"harness {\n max_running many\n}", `max_running: "many" is not a non-negative integer`},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(":4310 {\n"+tc.body+"\n}\n"), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if err := (&Harness{MaxRunning: -1}).Validate(); err == nil {
		t.Fatal("a negative max_running in JSON config validated")
	}
}

// TestTenantFromRequestPlaceholder runs Caddy with the tenant taken from a request header (as
// behind forward_auth's copy_headers): a request without it is refused with 401 and the
// Problem envelope, even on unknown paths under /v1; with it, each tenant sees only its own
// conversation, and the other's answers as an unknown one.
func TestTenantFromRequestPlaceholder(t *testing.T) {
	loadCaddyfile(t, fmt.Sprintf(`
http://localhost:9080 {
	harness {
		data_dir %s
		tenant {http.request.header.X-Tenant}
		provider mock
	}
}
`, t.TempDir()))
	hc := &http.Client{Transport: caddytest.CreateTestingTransport()}
	send := func(tenant, method, path string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, httpURL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tenant != "" {
			req.Header.Set("X-Tenant", tenant)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	const unauthenticated = `{"code":"UNAUTHENTICATED","message":"Request is not authenticated: it names no tenant"}`
	for _, path := range []string{"/v1/runtime", "/v1/conversations", "/v1/nothing-here"} {
		if status, body := send("", http.MethodPost, path); status != http.StatusUnauthorized || body != unauthenticated {
			t.Fatalf("POST %s without a tenant: %d %s", path, status, body)
		}
	}
	if status, _ := send("", http.MethodGet, "/healthz"); status != http.StatusOK {
		t.Fatalf("/healthz without a tenant: %d", status)
	}

	status, body := send("alice", http.MethodPost, "/v1/conversations")
	if status != http.StatusCreated {
		t.Fatalf("alice's conversation: %d %s", status, body)
	}
	conv := decodeJSON[api.Conversation](t, body).ID
	if status, _ := send("alice", http.MethodGet, "/v1/conversations/"+conv); status != http.StatusOK {
		t.Fatalf("alice reading her conversation: %d", status)
	}
	const unknown = "conv_0123456789abcdef0123456789abcdef"
	_, wantBody := send("bob", http.MethodGet, "/v1/conversations/"+unknown)
	status, body = send("bob", http.MethodGet, "/v1/conversations/"+conv)
	if status != http.StatusNotFound || body != strings.ReplaceAll(wantBody, unknown, conv) {
		t.Fatalf("bob reading alice's conversation: %d %s (an unknown id: %s)", status, body, wantBody)
	}
}

func decodeJSON[T any](t *testing.T, body string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
	return v
}
