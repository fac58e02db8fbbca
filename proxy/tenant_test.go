package proxy

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// tenantHeader carries the tenant in these tests; behind Caddy it is a placeholder such as
// {http.auth.user.id}.
const tenantHeader = "X-Test-Tenant"

func newTenantServer(t *testing.T, maxRunning int) *testServer {
	return newTestServer(t, Options{
		Tenant:     func(r *http.Request) string { return r.Header.Get(tenantHeader) },
		MaxRunning: maxRunning,
	})
}

// as sends req as tenant (validated against the OpenAPI document).
func (ts *testServer) as(tenant string, req request) result {
	ts.t.Helper()
	return ts.asWith(tenant, req, nil)
}

// asWith is as with more request headers.
func (ts *testServer) asWith(tenant string, req request, header map[string]string) result {
	ts.t.Helper()
	h := map[string]string{tenantHeader: tenant}
	for k, v := range header {
		h[k] = v
	}
	req.header = h
	return ts.do(req)
}

// tenantRoutes are the by-id requests of the protocol for conversation conv, execution id and
// action actionID.
func tenantRoutes(conv, id, actionID string) map[string]request {
	return map[string]request{
		"get conversation": {method: http.MethodGet, path: "/v1/conversations/" + conv},
		"rename conversation": {method: http.MethodPatch, path: "/v1/conversations/" + conv,
			body: ptr(`{"title":"intruder's"}`)},
		"start in conversation": {method: http.MethodPost, path: "/v1/executions",
			body: ptr(fmt.Sprintf(`{"conversationId":%q,"providerId":"mock","input":"intrude"}`, conv))},
		"get execution": {method: http.MethodGet, path: "/v1/executions/" + id},
		"events (JSON)": {method: http.MethodGet, path: "/v1/executions/" + id + "/events"},
		"events (SSE)":  {method: http.MethodGet, path: "/v1/executions/" + id + "/events", header: map[string]string{"Accept": "text/event-stream"}},
		"artifacts":     {method: http.MethodGet, path: "/v1/executions/" + id + "/artifacts"},
		"cancel":        {method: http.MethodPost, path: "/v1/executions/" + id + ":cancel", body: ptr(`{"reason":"intruder"}`)},
		"respond":       {method: http.MethodPost, path: "/v1/executions/" + id + "/actions/" + actionID + ":respond", body: ptr(`{"approved":true}`)},
	}
}

// TestAnotherTenantsIDsAnswerLikeUnknownIDs: every by-id route, asked by bob about alice's
// conversation, execution and action, answers byte for byte what it answers for ids that do
// not exist (with the id in the message, as the reference writes it), and leaves alice's
// execution as it was.
func TestAnotherTenantsIDsAnswerLikeUnknownIDs(t *testing.T) {
	ts := newTenantServer(t, 0)
	conv := decodeBody[api.Conversation](t, ts.as("alice", request{method: http.MethodPost, path: "/v1/conversations"})).ID
	res := ts.as("alice", request{method: http.MethodPost, path: "/v1/executions",
		body: ptr(fmt.Sprintf(`{"conversationId":%q,"providerId":"mock","input":"alice secret task","config":{"requireApproval":true}}`, conv))})
	requireStatus(t, res, http.StatusAccepted)
	exec := decodeBody[api.Execution](t, res)
	actionID := ts.waitForActionAs("alice", exec.ID)

	const unknownConv, unknownExec = "conv_0123456789abcdef0123456789abcdef", "exec_0123456789abcdef0123456789abcdef"
	foreign := tenantRoutes(conv, exec.ID, actionID)
	unknown := tenantRoutes(unknownConv, unknownExec, actionID)
	undo := strings.NewReplacer(unknownConv, conv, unknownExec, exec.ID)
	for name, req := range foreign {
		got := ts.asWith("bob", req, req.header)
		want := ts.asWith("bob", unknown[name], unknown[name].header)
		if got.status != http.StatusNotFound || got.status != want.status || string(got.body) != undo.Replace(string(want.body)) {
			t.Errorf("%s: bob got %s\nan unknown id gets %s", name, got, want)
		}
		for _, h := range []string{"Content-Type", "Content-Length"} {
			if got.header.Get(h) != want.header.Get(h) {
				t.Errorf("%s: %s %q, for an unknown id %q", name, h, got.header.Get(h), want.header.Get(h))
			}
		}
	}
	if got := decodeBody[api.Execution](t, ts.as("alice", request{method: http.MethodGet, path: "/v1/executions/" + exec.ID})); got.State != api.ExecutionStateAwaitingApproval {
		t.Fatalf("alice's execution after bob's requests: %s", got.State)
	}

	// Alice, on her own execution, with an action id of bob's: what an unknown action id gets.
	bobConv := decodeBody[api.Conversation](t, ts.as("bob", request{method: http.MethodPost, path: "/v1/conversations"})).ID
	bobExec := decodeBody[api.Execution](t, ts.as("bob", request{method: http.MethodPost, path: "/v1/executions",
		body: ptr(fmt.Sprintf(`{"conversationId":%q,"providerId":"mock","input":"bob","config":{"requireApproval":true}}`, bobConv))}))
	bobAction := ts.waitForActionAs("bob", bobExec.ID)
	const unknownAction = "action_0123456789abcdef0123456789abcdef"
	got := ts.as("alice", request{method: http.MethodPost, path: "/v1/executions/" + exec.ID + "/actions/" + bobAction + ":respond", body: ptr(`{"approved":true}`)})
	want := ts.as("alice", request{method: http.MethodPost, path: "/v1/executions/" + exec.ID + "/actions/" + unknownAction + ":respond", body: ptr(`{"approved":true}`)})
	if got.status != http.StatusNotFound || string(got.body) != strings.ReplaceAll(string(want.body), unknownAction, bobAction) {
		t.Fatalf("alice answering bob's action got %s\nan unknown action id gets %s", got, want)
	}
}

// waitForActionAs reads the execution's stream as tenant until action.required and returns the
// action id.
func (ts *testServer) waitForActionAs(tenant, id string) string {
	ts.t.Helper()
	s := ts.openStream(id, "", map[string]string{tenantHeader: tenant})
	defer s.close()
	for {
		ev, ok := s.next()
		if !ok {
			ts.t.Fatalf("stream of %s ended before action.required", id)
		}
		if ev.Type == api.StandardEventTypeActionRequired {
			return typed(ev.Data.AsActionRequest()).ID
		}
	}
}

// TestRequestWithoutTenantIs401: with tenancy on, a request whose tenant is empty is refused
// before it is routed — known routes, unknown ones, wrong methods alike — and creates nothing;
// the probes /healthz and /readyz still answer (a load balancer sends no credentials).
func TestRequestWithoutTenantIs401(t *testing.T) {
	ts := newTenantServer(t, 0)
	const body = `{"code":"UNAUTHENTICATED","message":"Request is not authenticated: it names no tenant"}`
	for _, tenant := range []string{"", "  "} {
		for _, req := range []request{
			{method: http.MethodGet, path: "/v1/runtime"},
			{method: http.MethodPost, path: "/v1/conversations", body: ptr(`{}`)},
			{method: http.MethodGet, path: "/v1/executions/exec_0123456789abcdef0123456789abcdef"},
		} {
			requireStatusBody(t, ts.as(tenant, req), http.StatusUnauthorized, body)
		}
		for _, req := range []request{
			{method: http.MethodGet, path: "/v1/no-such-route"},
			{method: http.MethodDelete, path: "/v1/runtime"},
		} {
			requireStatusBody(t, ts.send(req), http.StatusUnauthorized, body)
		}
	}
	requireStatus(t, ts.get("/healthz"), http.StatusOK)
	requireStatus(t, ts.get("/readyz"), http.StatusOK)
}

// TestMaxRunningAnswers429: a start beyond the tenant's bound answers 429 RATE_LIMITED with
// Retry-After (as documented), other tenants are unaffected, and the start succeeds once the
// running execution has been cancelled.
func TestMaxRunningAnswers429(t *testing.T) {
	ts := newTenantServer(t, 1)
	startAs := func(tenant string) result {
		conv := decodeBody[api.Conversation](t, ts.as(tenant, request{method: http.MethodPost, path: "/v1/conversations"})).ID
		return ts.as(tenant, request{method: http.MethodPost, path: "/v1/executions",
			body: ptr(fmt.Sprintf(`{"conversationId":%q,"providerId":"mock","input":"x","config":{"requireApproval":true}}`, conv))})
	}
	first := startAs("alice")
	requireStatus(t, first, http.StatusAccepted)
	limited := startAs("alice")
	requireStatusBody(t, limited, http.StatusTooManyRequests,
		`{"code":"RATE_LIMITED","message":"Too many executions running at once (at most 1); retry when one has finished"}`)
	if got := limited.header.Get("Retry-After"); got != "1" {
		t.Fatalf("Retry-After %q, want 1", got)
	}
	requireStatus(t, startAs("bob"), http.StatusAccepted)

	id := decodeBody[api.Execution](t, first).ID
	requireStatus(t, ts.as("alice", request{method: http.MethodPost, path: "/v1/executions/" + id + ":cancel"}), http.StatusOK)
	requireStatus(t, startAs("alice"), http.StatusAccepted)
}

// TestMaxRunningWithoutTenancyBoundsEveryone: without a tenant setting, max_running bounds the
// one anonymous tenant, that is all callers together.
func TestMaxRunningWithoutTenancyBoundsEveryone(t *testing.T) {
	ts := newTestServer(t, Options{MaxRunning: 1})
	ts.start("x", `{"requireApproval":true}`)
	conv := ts.createConversation()
	res := ts.post("/v1/executions", fmt.Sprintf(`{"conversationId":%q,"providerId":"mock","input":"y"}`, conv))
	requireStatus(t, res, http.StatusTooManyRequests)
}
