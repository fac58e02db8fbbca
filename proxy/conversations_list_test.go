package proxy

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/cluster"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/backend/store/postgres"
	"github.com/harness-edge/harness-edge/internal/pgtest"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// newTenantServerOnPostgres is newTenantServer over a PostgreSQL store of its own (a
// throw-away cluster, internal/pgtest).
func newTenantServerOnPostgres(t *testing.T) *testServer {
	t.Helper()
	st, err := postgres.Open(context.Background(), postgres.Config{DSN: pgtest.Start(t).NewDatabase(t), Node: "node-a"})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := backend.Open(backend.Options{Store: st, Cluster: cluster.New(st, cluster.Options{}), Providers: []backend.Provider{mock.New()}})
	if err != nil {
		t.Fatal(err)
	}
	h := New(rt, Options{Tenant: func(r *http.Request) string { return r.Header.Get(tenantHeader) }})
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Shutdown()
		h.WaitDetached(testTimeout)
		srv.Close()
		_ = rt.Close()
	})
	return &testServer{t: t, rt: rt, handler: h, srv: srv, streams: &countingObserver{}}
}

// listConversationsAs follows nextCursor from path (which has a query) as tenant.
func (ts *testServer) listConversationsAs(tenant, path string) []api.ConversationSummary {
	ts.t.Helper()
	var all []api.ConversationSummary
	next := path
	for range 100 {
		res := ts.as(tenant, request{method: http.MethodGet, path: next})
		requireStatus(ts.t, res, http.StatusOK)
		page := decodeBody[api.ConversationList](ts.t, res)
		if page.Conversations == nil {
			ts.t.Fatalf("%s: conversations is not an array: %s", next, res.body)
		}
		all = append(all, page.Conversations...)
		if page.NextCursor == nil {
			return all
		}
		next = path + "&after=" + url.QueryEscape(*page.NextCursor)
	}
	ts.t.Fatal("listing does not end")
	return nil
}

func summaryIDs(list []api.ConversationSummary) []string {
	out := make([]string, len(list))
	for i, c := range list {
		out[i] = c.ID
	}
	return out
}

// createConversationAs creates a conversation with body as tenant and returns its id.
func (ts *testServer) createConversationAs(tenant, body string) string {
	ts.t.Helper()
	res := ts.as(tenant, request{method: http.MethodPost, path: "/v1/conversations", body: &body})
	requireStatus(ts.t, res, http.StatusCreated)
	return decodeBody[api.Conversation](ts.t, res).ID
}

// runToEndAs starts input in conv as tenant and polls the execution until it is terminal.
func (ts *testServer) runToEndAs(tenant, conv, input string) api.Execution {
	ts.t.Helper()
	res := ts.as(tenant, request{method: http.MethodPost, path: "/v1/executions",
		body: ptr(fmt.Sprintf(`{"conversationId":%q,"providerId":"mock","input":%q}`, conv, input))})
	requireStatus(ts.t, res, http.StatusAccepted)
	id := decodeBody[api.Execution](ts.t, res).ID
	for deadline := time.Now().Add(testTimeout); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		e := decodeBody[api.Execution](ts.t, ts.as(tenant, request{method: http.MethodGet, path: "/v1/executions/" + id}))
		if e.State.Terminal() {
			return e
		}
	}
	ts.t.Fatalf("execution %s did not end", id)
	return api.Execution{}
}

// GET /v1/conversations lists the caller's tenant's conversations, most recently active first,
// paged with a cursor, with each one's count, latest state and previews; filters by metadata
// key and value and by activity time; refuses bad parameters with a VALIDATION_ERROR.
func TestListConversationsOverHTTP(t *testing.T) {
	t.Run("bolt", func(t *testing.T) { testListConversations(t, newTenantServer(t, 0)) })
	t.Run("postgres", func(t *testing.T) { testListConversations(t, newTenantServerOnPostgres(t)) })
}

func testListConversations(t *testing.T, ts *testServer) {
	a := ts.createConversationAs("alice", `{}`)
	b := ts.createConversationAs("alice", `{"metadata":{"project":"x"}}`)
	c := ts.createConversationAs("bob", `{}`)
	long := strings.Repeat("word ", 40) // 200 characters: the preview is cut
	ts.runToEndAs("alice", a, "first")
	last := ts.runToEndAs("alice", a, long)
	ts.runToEndAs("bob", c, "bob's")

	all := ts.listConversationsAs("alice", "/v1/conversations?limit=1")
	if got := summaryIDs(all); !slices.Equal(got, []string{a, b}) {
		t.Fatalf("alice's conversations, pages of 1: %v, want %v", got, []string{a, b})
	}
	first := all[0]
	if first.ExecutionCount != 2 || first.LatestExecution == nil || first.LatestExecution.ID != last.ID ||
		first.LatestExecution.State != api.ExecutionStateSucceeded || first.LastActivityAt != last.UpdatedAt {
		t.Fatalf("conversation a: %+v; want 2 executions, the latest %s succeeded, active at %s", first, last.ID, last.UpdatedAt)
	}
	if p := first.LatestExecution.InputPreview; len([]rune(p)) != 121 || !strings.HasSuffix(p, "…") || !strings.HasPrefix(long, strings.TrimSuffix(p, "…")) {
		t.Fatalf("input preview %q: want the first 120 characters and an ellipsis", p)
	}
	if o := first.LatestExecution.OutputPreview; o == nil || *o == "" {
		t.Fatalf("output preview of a succeeded execution: %v", o)
	}
	second := all[1]
	if second.ExecutionCount != 0 || second.LatestExecution != nil || second.LastActivityAt != second.CreatedAt ||
		second.Metadata["project"] != "x" {
		t.Fatalf("conversation b: %+v; want no executions, active when created, its metadata", second)
	}
	if got := summaryIDs(ts.listConversationsAs("bob", "/v1/conversations?limit=50")); !slices.Equal(got, []string{c}) {
		t.Fatalf("bob's conversations: %v", got)
	}

	filters := map[string][]string{
		"metadataKey=project":                  {b},
		"metadataKey=project&metadataValue=x":  {b},
		"metadataKey=project&metadataValue=y":  {},
		"metadataKey=nothing":                  {},
		"activeAfter=" + first.LastActivityAt:  {a},
		"activeBefore=" + first.LastActivityAt: {b},
	}
	for query, want := range filters {
		if got := summaryIDs(ts.listConversationsAs("alice", "/v1/conversations?"+query)); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", query, got, want)
		}
	}
	for _, query := range []string{"limit=0", "limit=201", "after=nonsense", "activeAfter=yesterday",
		"activeBefore=2026-13-01T00:00:00.000Z", "metadataValue=x", "metadataKey=", "colour=red"} {
		res := ts.as("alice", request{method: http.MethodGet, path: "/v1/conversations?" + query})
		if res.status != http.StatusBadRequest || !strings.Contains(string(res.body), `"VALIDATION_ERROR"`) {
			t.Errorf("%s: %s, want 400 VALIDATION_ERROR", query, res)
		}
	}
}

// PATCH /v1/conversations/{id} is a JSON merge patch of the title and the metadata: fields
// left out stay, null removes, the answer is the whole conversation; it does not count as
// activity; bad bodies are 400 and another tenant's or an unknown id 404.
func TestUpdateConversationOverHTTP(t *testing.T) {
	t.Run("bolt", func(t *testing.T) { testUpdateConversation(t, newTenantServer(t, 0)) })
	t.Run("postgres", func(t *testing.T) { testUpdateConversation(t, newTenantServerOnPostgres(t)) })
}

func testUpdateConversation(t *testing.T, ts *testServer) {
	a := ts.createConversationAs("alice", `{"metadata":{"project":"x","colour":"red"}}`)
	patch := func(tenant, id, body string) result {
		t.Helper()
		return ts.as(tenant, request{method: http.MethodPatch, path: "/v1/conversations/" + id, body: &body})
	}
	res := patch("alice", a, `{"title":"Trip to Lisbon","metadata":{"colour":null,"pinned":true}}`)
	requireStatus(t, res, http.StatusOK)
	got := decodeBody[api.Conversation](t, res)
	if got.Title == nil || *got.Title != "Trip to Lisbon" || got.Metadata["project"] != "x" || got.Metadata["pinned"] != true ||
		len(got.Metadata) != 2 {
		t.Fatalf("after the patch: %+v", got)
	}
	read := decodeBody[api.Conversation](t, ts.as("alice", request{method: http.MethodGet, path: "/v1/conversations/" + a}))
	if read.Title == nil || *read.Title != "Trip to Lisbon" || len(read.Metadata) != 2 {
		t.Fatalf("read after the patch: %+v", read)
	}
	listed := ts.listConversationsAs("alice", "/v1/conversations?limit=5")
	if len(listed) != 1 || listed[0].Title == nil || *listed[0].Title != "Trip to Lisbon" || listed[0].LastActivityAt != listed[0].CreatedAt {
		t.Fatalf("listed after the patch: %+v (a rename is not activity)", listed)
	}
	// Only the title: the metadata stays. null removes the title.
	requireStatus(t, patch("alice", a, `{"title":"Lisbon"}`), http.StatusOK)
	got = decodeBody[api.Conversation](t, patch("alice", a, `{"title":null}`))
	if got.Title != nil || len(got.Metadata) != 2 {
		t.Fatalf("after removing the title: %+v", got)
	}

	for _, body := range []string{``, `[]`, `{"title":5}`, `{"metadata":"x"}`, `{"metadata":[1]}`,
		`{"title":"` + strings.Repeat("x", 201) + `"}`, `{"title":"a","title":"b"}`, `{"name":"x"}`} {
		res := patch("alice", a, body)
		if res.status != http.StatusBadRequest || !strings.Contains(string(res.body), `"VALIDATION_ERROR"`) {
			t.Errorf("body %.40q: %s, want 400 VALIDATION_ERROR", body, res)
		}
	}
	for _, who := range []struct{ tenant, id string }{{"bob", a}, {"alice", "conv_0123456789abcdef0123456789abcdef"}} {
		res := patch(who.tenant, who.id, `{"title":"mine now"}`)
		if res.status != http.StatusNotFound || !strings.Contains(string(res.body), "Conversation not found: "+who.id) {
			t.Errorf("%s patching %s: %s, want 404", who.tenant, who.id, res)
		}
	}
	if read := decodeBody[api.Conversation](t, ts.as("alice", request{method: http.MethodGet, path: "/v1/conversations/" + a})); read.Title != nil {
		t.Fatalf("a refused patch changed the conversation: %+v", read)
	}
}

// Concurrent updates of different metadata keys on one node all land: each merge reads what
// the one before it committed (no lost update).
func TestConcurrentConversationUpdatesAllLand(t *testing.T) {
	ts := newTenantServer(t, 0)
	a := ts.createConversationAs("alice", `{}`)
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body := fmt.Sprintf(`{"metadata":{"k%d":true}}`, i)
			res := ts.send(request{method: http.MethodPatch, path: "/v1/conversations/" + a, body: &body,
				header: map[string]string{tenantHeader: "alice"}})
			if res.status != http.StatusOK {
				t.Errorf("patch %d: %s", i, res)
			}
		})
	}
	wg.Wait()
	got := decodeBody[api.Conversation](t, ts.as("alice", request{method: http.MethodGet, path: "/v1/conversations/" + a}))
	if len(got.Metadata) != n {
		t.Fatalf("after %d concurrent patches of different keys the metadata has %d: %v", n, len(got.Metadata), got.Metadata)
	}
}
