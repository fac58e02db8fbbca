package main

import (
	"io"
	"net/http"
	"testing"
)

// TestProbesNeedNoCredentials: a load balancer's health checks send no credentials, so with
// tenancy on (examples/tenants.Caddyfile: basic_auth, `tenant {http.auth.user.id}`) /healthz and
// /readyz must still answer 200 — before, basic_auth refused both with 401, and past it the
// handler refused /readyz with 401 "names no tenant", so every node looked down. Everything
// else still needs credentials.
func TestProbesNeedNoCredentials(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)
	srv := startCaddyWith(t, bin, tenantsEnv(t, bin, 8), tenantsCaddyfile)
	defer srv.stop(t)

	for _, path := range []string{"/healthz", "/readyz"} {
		status, body := getWithoutCredentials(t, srv.url+path)
		if status != http.StatusOK {
			t.Errorf("GET %s without credentials: %d %s, want 200", path, status, body)
		}
	}
	if status, body := getWithoutCredentials(t, srv.url+"/v1/runtime"); status != http.StatusUnauthorized {
		t.Errorf("GET /v1/runtime without credentials: %d %s, want 401", status, body)
	}
	alice := user{t, srv.url, "alice", passwords["alice"]}
	for _, path := range []string{"/healthz", "/readyz"} {
		if status, _, body := alice.send(http.MethodGet, path, "", nil); status != http.StatusOK {
			t.Errorf("GET %s as alice: %d %s, want 200", path, status, body)
		}
	}
}

// getWithoutCredentials is GET url with no Authorization header: the status and body.
func getWithoutCredentials(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}
