package proxy

import (
	"cmp"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/pb33f/go-yaml"
	"github.com/pb33f/libopenapi"

	"github.com/harness-edge/harness-edge/openapi"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// listPages follows nextCursor from path (which has a query) and returns every execution.
func (ts *testServer) listPages(path string) []api.Execution {
	ts.t.Helper()
	var all []api.Execution
	next := path
	for range 100 {
		res := ts.get(next)
		requireStatus(ts.t, res, http.StatusOK)
		page := decodeBody[api.ExecutionList](ts.t, res)
		if page.Executions == nil {
			ts.t.Fatalf("%s: executions is not an array: %s", next, res.body)
		}
		all = append(all, page.Executions...)
		if page.NextCursor == nil {
			return all
		}
		next = path + "&after=" + url.QueryEscape(*page.NextCursor)
	}
	ts.t.Fatal("listing does not end")
	return nil
}

func executionIDs(execs []api.Execution) []string {
	out := make([]string, len(execs))
	for i, e := range execs {
		out[i] = e.ID
	}
	return out
}

func sortedNewestFirst(execs []api.Execution) []string {
	s := slices.Clone(execs)
	slices.SortFunc(s, func(a, b api.Execution) int {
		return cmp.Or(cmp.Compare(b.CreatedAt, a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	return executionIDs(s)
}

func TestListExecutionsOverHTTP(t *testing.T) {
	ts := newTestServer(t, Options{})
	var done []api.Execution
	for range 5 {
		done = append(done, ts.waitTerminal(ts.start("hello", "").ID))
	}
	waiting := ts.start("deploy", `{"requireApproval":true}`, "action.approval")
	ts.waitForEvent(waiting.ID, api.StandardEventTypeActionRequired)
	waiting = ts.execution(waiting.ID)
	all := append(slices.Clone(done), waiting)

	for _, limit := range []string{"1", "2", "200"} {
		if got := ts.listPages("/v1/executions?limit=" + limit); !slices.Equal(executionIDs(got), sortedNewestFirst(all)) {
			t.Fatalf("limit %s: %v, want %v", limit, executionIDs(got), sortedNewestFirst(all))
		}
	}
	// No limit: the default page (50) holds everything, so there is no cursor.
	page := decodeBody[api.ExecutionList](t, ts.get("/v1/executions"))
	if len(page.Executions) != len(all) || page.NextCursor != nil {
		t.Fatalf("default page: %d executions, cursor %v", len(page.Executions), page.NextCursor)
	}
	if !reflect.DeepEqual(page.Executions[0], waiting) {
		t.Fatalf("newest listed %+v, GET %+v", page.Executions[0], waiting)
	}

	// state: repeated, comma-separated, both, with empty items: one meaning.
	wantBoth := sortedNewestFirst(all)
	for _, query := range []string{
		"state=succeeded&state=awaiting_approval", "state=succeeded,awaiting_approval",
		"state=succeeded&state=,awaiting_approval,", "state=awaiting_approval%2Csucceeded",
	} {
		if got := ts.listPages("/v1/executions?limit=2&" + query); !slices.Equal(executionIDs(got), wantBoth) {
			t.Fatalf("%s: %v", query, executionIDs(got))
		}
	}
	if got := ts.listPages("/v1/executions?state=awaiting_approval&limit=1"); !slices.Equal(executionIDs(got), []string{waiting.ID}) {
		t.Fatalf("awaiting_approval: %v", executionIDs(got))
	}
	if got := ts.listPages("/v1/executions?state=running,failed"); len(got) != 0 {
		t.Fatalf("running,failed: %v", executionIDs(got))
	}
	if got := ts.listPages("/v1/executions?state="); len(got) != len(all) {
		t.Fatalf("an empty state filters nothing: %d", len(got))
	}

	// Per conversation (each ts.start has its own conversation).
	path := "/v1/conversations/" + url.PathEscape(waiting.ConversationID) + "/executions?limit=5"
	if got := ts.listPages(path); !slices.Equal(executionIDs(got), []string{waiting.ID}) {
		t.Fatalf("conversation: %v", executionIDs(got))
	}
	requireStatusBody(t, ts.get("/v1/conversations/conv_missing/executions"), http.StatusNotFound,
		`{"code":"NOT_FOUND","message":"Conversation not found: conv_missing"}`)

	// HEAD: the status and headers of GET.
	res := ts.do(request{method: http.MethodHead, path: "/v1/executions"})
	if res.status != http.StatusOK || len(res.body) != 0 || res.header.Get("Content-Type") != contentTypeJSON {
		t.Fatalf("HEAD: %s %v", res, res.header)
	}
}

func TestListExecutionsValidation(t *testing.T) {
	ts := newTestServer(t, Options{})
	const (
		limitMsg  = "limit must be an integer from 1 to 200"
		limitWhy  = "must be an integer from 1 to 200"
		cursorMsg = "after must be a nextCursor returned by this listing"
		cursorWhy = "not a nextCursor of this server"
		stateMsg  = "state must be one of queued, starting, running, awaiting_input, awaiting_approval, cancelling, succeeded, failed, cancelled"
	)
	for _, base := range []string{"/v1/executions", "/v1/conversations/conv_missing/executions"} {
		for query, want := range map[string]string{
			"limit=0":            validationBody(limitMsg, "parameter", "limit", limitWhy),
			"limit=201":          validationBody(limitMsg, "parameter", "limit", limitWhy),
			"limit=-1":           validationBody(limitMsg, "parameter", "limit", limitWhy),
			"limit=ten":          validationBody(limitMsg, "parameter", "limit", limitWhy),
			"limit=%zz":          validationBody(limitMsg, "parameter", "limit", limitWhy),
			"after=exec_123":     validationBody(cursorMsg, "parameter", "after", cursorWhy),
			"after=%zz":          validationBody(cursorMsg, "parameter", "after", cursorWhy),
			"after=AQAAAA":       validationBody(cursorMsg, "parameter", "after", cursorWhy),
			"state=done":         validationBody(stateMsg, "parameter", "state", `unknown state "done"`),
			"state=running,DONE": validationBody(stateMsg, "parameter", "state", `unknown state "DONE"`),
			"state=%zz":          validationBody(stateMsg, "parameter", "state", `unknown state ""`),
		} {
			// The query is checked before the conversation is looked up.
			requireStatusBody(t, ts.get(base+"?"+query), http.StatusBadRequest, want)
		}
	}
}

func TestOpenAPIDocumentIsServed(t *testing.T) {
	ts := newTestServer(t, Options{})

	res := ts.do(request{method: http.MethodGet, path: "/v1/openapi.yaml"})
	if res.status != http.StatusOK || res.header.Get("Content-Type") != "application/yaml" {
		t.Fatalf("openapi.yaml: %d %q", res.status, res.header.Get("Content-Type"))
	}
	if string(res.body) != string(openapi.Document) {
		t.Fatal("openapi.yaml is not openapi/harness.yaml byte for byte")
	}
	var fromYAML any
	if err := yaml.Unmarshal(res.body, &fromYAML); err != nil {
		t.Fatalf("openapi.yaml does not parse as YAML: %v", err)
	}

	res = ts.do(request{method: http.MethodGet, path: "/v1/openapi.json"})
	if res.status != http.StatusOK || res.header.Get("Content-Type") != contentTypeJSON {
		t.Fatalf("openapi.json: %d %q", res.status, res.header.Get("Content-Type"))
	}
	var fromJSON any
	if err := json.Unmarshal(res.body, &fromJSON); err != nil {
		t.Fatalf("openapi.json does not parse as JSON: %v", err)
	}
	// Same content: the YAML, parsed by another YAML library, then put through JSON.
	roundTrip, err := json.Marshal(fromYAML)
	if err != nil {
		t.Fatalf("the YAML has no JSON form: %v", err)
	}
	var want any
	if err := json.Unmarshal(roundTrip, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromJSON, want) {
		t.Fatal("openapi.json differs from openapi.yaml")
	}
	// And an OpenAPI tool reads it as the same 3.1 document.
	doc, err := libopenapi.NewDocument(res.body)
	if err != nil {
		t.Fatal(err)
	}
	model, err := doc.BuildV3Model()
	if err != nil || doc.GetVersion() != "3.1.0" || model.Model.Paths.PathItems.GetOrZero("/v1/executions") == nil {
		t.Fatalf("openapi.json as OpenAPI: version %q, %v", doc.GetVersion(), err)
	}

	// A second request is served from the converted copy, identical.
	if again := ts.get("/v1/openapi.json"); string(again.body) != string(res.body) {
		t.Fatal("openapi.json changed between requests")
	}
	head := ts.do(request{method: http.MethodHead, path: "/v1/openapi.yaml"})
	if head.status != http.StatusOK || head.header.Get("Content-Length") != strconv.Itoa(len(openapi.Document)) {
		t.Fatalf("HEAD openapi.yaml: %d, Content-Length %q", head.status, head.header.Get("Content-Length"))
	}
}

func TestNotFoundOutsideTheProtocol(t *testing.T) {
	for _, path := range []string{"/", "/openapi.yaml", "/v2/executions?x=1"} {
		rec := httptest.NewRecorder()
		NotFound(rec, httptest.NewRequest(http.MethodGet, path, nil))
		u, _ := url.Parse(path)
		want := `{"code":"NOT_FOUND","message":"Route not found: GET ` + u.EscapedPath() +
			` (this server answers the Harness Runtime API under /v1; its OpenAPI document is GET /v1/openapi.yaml)"}`
		if rec.Code != http.StatusNotFound || rec.Body.String() != want || rec.Header().Get("Content-Type") != contentTypeJSON {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
	}
}
