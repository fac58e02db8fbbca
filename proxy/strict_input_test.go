package proxy

import (
	"net/http"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/internal/testutil"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Issue 44 item 6: input that must be refused was not. A NUL in a path segment or a query value
// answered 500 on PostgreSQL (SQLSTATE 22021) and 404 or 200 on bbolt; duplicate members were
// taken (the last one won: {"approved":true,"approved":false} denied the run); unknown query
// parameters and undocumented empty or repeated values were ignored. Every case below answers
// 400 VALIDATION_ERROR, the same on both stores, and the documented forms keep working.

func TestStrictInputOnBothStores(t *testing.T) {
	for _, s := range []struct {
		name string
		open func(t *testing.T) storeUnderTest
	}{{"bolt", boltUnderTest}, {"postgres", postgresUnderTest}} {
		t.Run(s.name, func(t *testing.T) {
			var logs testutil.LockedBuffer
			testStrictInput(t, s.open(t).serve(t, &logs, nil))
		})
	}
}

// strictCase is one request and the status it must answer; for a 400, where (a parameter or
// a pointer, "" to skip) is what its details must name.
type strictCase struct {
	method, path string
	body         string
	status       int
	where        string
}

func testStrictInput(t *testing.T, ts *testServer) {
	conv := ts.createConversation()
	done := ts.startIn("", conv, "hello")
	ts.waitTerminal(done.ID)
	pending := ts.start("approve me", `{"requireApproval":true}`)
	actionID := typed(ts.waitForEvent(pending.ID, api.StandardEventTypeActionRequired).Data.AsActionRequest()).ID
	respond := "/v1/executions/" + pending.ID + "/actions/" + actionID + ":respond"
	rule := decodeBody[api.ActionRule](t, ts.post("/v1/action-rules", `{"match":{"title":"zz-no-match"},"decision":"approve"}`))
	start := func(extra string) string {
		return `{"conversationId":"` + conv + `","providerId":"mock","input":"x"` + extra + `}`
	}

	refused := []strictCase{
		// NUL in a path segment.
		{"GET", "/v1/executions/%00", "", 400, "id"},
		{"GET", "/v1/executions/a%00b/events", "", 400, "id"},
		{"GET", "/v1/executions/%00/artifacts", "", 400, "id"},
		{"POST", "/v1/executions/%00:cancel", "", 400, "id"},
		{"POST", "/v1/executions/" + pending.ID + "/actions/%00:respond", `{"approved":true}`, 400, "actionId"},
		{"GET", "/v1/conversations/%00", "", 400, "id"},
		{"GET", "/v1/conversations/%00/events", "", 400, "id"},
		{"GET", "/v1/conversations/%00/executions", "", 400, "id"},
		{"GET", "/v1/action-rules/%00", "", 400, "id"},
		{"POST", "/v1/action-rules/%00:revoke", "", 400, "id"},
		// NUL in a query value.
		{"GET", "/v1/actions?conversationId=%00", "", 400, "conversationId"},
		{"GET", "/v1/actions?providerId=a%00b", "", 400, "providerId"},
		{"GET", "/v1/actions?after=%00", "", 400, "after"},
		{"GET", "/v1/executions?after=a%00", "", 400, "after"},
		{"GET", "/v1/action-rules?conversationId=%00", "", 400, "conversationId"},
		{"GET", "/v1/events?conversation=%00", "", 400, "conversation"},
		{"GET", "/v1/conversations/" + conv + "/events?provider=mo%00ck", "", 400, "provider"},
		// NUL in an id, a name or a title of a body.
		{"POST", "/v1/executions", `{"conversationId":"\u0000","providerId":"mock","input":"x"}`, 400, "/conversationId"},
		{"POST", "/v1/executions", `{"conversationId":"` + conv + `","providerId":"mo\u0000ck","input":"x"}`, 400, "/providerId"},
		{"POST", "/v1/executions", start(`,"requiredCapabilities":["a\u0000"]`), 400, "/requiredCapabilities"},
		{"POST", "/v1/action-rules", `{"match":{"title":"a\u0000"},"decision":"approve"}`, 400, "/match/title"},
		{"POST", "/v1/action-rules", `{"match":{"toolKind":"\u0000"},"decision":"approve"}`, 400, "/match/toolKind"},
		{"POST", "/v1/action-rules", `{"conversationId":"\u0000","match":{"title":"t"},"decision":"approve"}`, 400, "/conversationId"},
		{"POST", respond, `{"decision":"respond","optionId":"\u0000"}`, 400, "/optionId"},
		// Duplicate members, at any depth, in every body.
		{"POST", respond, `{"approved":true,"approved":false}`, 400, "/approved"},
		{"POST", respond, `{"approved":true,"metadata":{"a":1,"\u0061":2}}`, 400, "/metadata/a"},
		{"POST", "/v1/executions", start(`,"input":"y"`), 400, "/input"},
		{"POST", "/v1/executions", start(`,"config":{"delayMs":1,"delayMs":2}`), 400, "/config/delayMs"},
		{"POST", "/v1/executions", start(`,"INPUT":{"a":[{"b":1,"b":1}]}`), 400, "/INPUT/a/0/b"},
		{"POST", "/v1/conversations", `{"metadata":{},"metadata":{}}`, 400, "/metadata"},
		{"POST", "/v1/executions/" + done.ID + ":cancel", `{"reason":"a","reason":"b"}`, 400, "/reason"},
		{"POST", "/v1/action-rules", `{"match":{"title":"t","title":"u"},"decision":"approve"}`, 400, "/match/title"},
		{"POST", "/v1/action-rules/" + rule.ID + ":revoke", `{"a":1,"a":1}`, 400, "/a"},
		// Unknown query parameters, on every route.
		{"GET", "/v1/runtime?foo=1", "", 400, "foo"},
		{"GET", "/v1/runtime/capabilities?foo=1", "", 400, "foo"},
		{"GET", "/v1/executions?foo=1", "", 400, "foo"},
		{"POST", "/v1/executions?foo=1", start(""), 400, "foo"},
		{"GET", "/v1/executions/" + done.ID + "?foo=1", "", 400, "foo"},
		{"GET", "/v1/executions/" + done.ID + "/events?foo=1", "", 400, "foo"},
		{"GET", "/v1/executions/" + done.ID + "/artifacts?foo=1", "", 400, "foo"},
		{"POST", "/v1/executions/" + done.ID + ":cancel?foo=1", "", 400, "foo"},
		{"POST", respond + "?foo=1", `{"approved":true}`, 400, "foo"},
		{"POST", "/v1/conversations?foo=1", "", 400, "foo"},
		{"GET", "/v1/conversations/" + conv + "?foo=1", "", 400, "foo"},
		{"GET", "/v1/conversations/" + conv + "/executions?foo=1", "", 400, "foo"},
		{"GET", "/v1/actions?foo=1", "", 400, "foo"},
		{"GET", "/v1/usage?foo=1", "", 400, "foo"},
		{"GET", "/v1/action-rules?foo=1", "", 400, "foo"},
		{"GET", "/v1/action-rules?limit=-3", "", 400, "limit"},
		{"POST", "/v1/action-rules?foo=1", `{"match":{"title":"t"},"decision":"approve"}`, 400, "foo"},
		{"GET", "/v1/action-rules/" + rule.ID + "?foo=1", "", 400, "foo"},
		{"GET", "/v1/openapi.yaml?foo=1", "", 400, "foo"},
		{"GET", "/v1/events?foo=1", "", 400, "foo"},
		// Empty or repeated values the documents do not define.
		{"GET", "/v1/actions?state=", "", 400, "state"},
		{"GET", "/v1/actions?state=pending&state=resolved", "", 400, "state"},
		{"GET", "/v1/actions?state=pending&state=pending", "", 400, "state"},
		{"GET", "/v1/actions?conversationId=", "", 400, "conversationId"},
		{"GET", "/v1/actions?limit=", "", 400, "limit"},
		{"GET", "/v1/usage?groupBy=", "", 400, "groupBy"},
		{"GET", "/v1/usage?from=", "", 400, "from"},
		{"GET", "/v1/usage?groupBy=day&groupBy=provider", "", 400, "groupBy"},
		{"GET", "/v1/action-rules?active=", "", 400, "active"},
		{"GET", "/v1/action-rules?active=true&active=false", "", 400, "active"},
		{"GET", "/v1/executions?limit=", "", 400, "limit"},
		{"GET", "/v1/executions?limit=1&limit=2", "", 400, "limit"},
		{"GET", "/v1/executions/" + done.ID + "/events?after=1&after=2", "", 400, "after"},
		{"GET", "/v1/events?conversation=a&conversation=b", "", 400, "conversation"},
		{"GET", "/v1/events?type=", "", 400, "type"},
		// A cursor ahead of the log.
		{"GET", "/v1/events?after=" + tagOf(t, ts, "/v1/events") + "-999999999", "", 400, "after"},
		{"GET", "/v1/conversations/" + conv + "/events?after=" + tagOf(t, ts, "/v1/conversations/"+conv+"/events") + "-999999999", "", 400, "after"},
	}
	for _, c := range refused {
		t.Run(c.method+" "+c.path+" "+c.body, func(t *testing.T) {
			res := ts.send(strictRequest(c))
			if res.status != c.status {
				t.Fatalf("got %s, want %d", res, c.status)
			}
			p := decodeBody[api.Problem](t, res)
			if p.Code != "VALIDATION_ERROR" {
				t.Fatalf("got %s, want a VALIDATION_ERROR", res)
			}
			if c.where != "" && !strings.Contains(string(res.body), `:"`+c.where+`"`) {
				t.Fatalf("got %s, want details naming %q", res, c.where)
			}
		})
	}

	accepted := []strictCase{
		{"GET", "/v1/executions?state=succeeded&state=running,queued", "", 200, ""},
		{"GET", "/v1/executions?state=&after=", "", 200, ""},
		{"GET", "/v1/executions/" + done.ID + "/events?after=&limit=", "", 200, ""},
		{"GET", "/v1/executions/" + done.ID + "/events?after=999", "", 200, ""}, // echoed, as the reference
		{"GET", "/v1/conversations/" + conv + "/events?type=run.queued&type=run.completed,run.failed", "", 200, ""},
		{"GET", "/v1/conversations/" + conv + "/events?after=0&lifecycle=", "", 200, ""},
		{"GET", "/v1/events?provider=mock&provider=echo", "", 200, ""},
		{"GET", "/v1/actions?state=pending&providerId=mock&conversationId=" + conv, "", 200, ""},
		{"GET", "/v1/action-rules?active=true&conversationId=" + conv, "", 200, ""},
		{"GET", "/v1/usage?groupBy=day&limit=5", "", 200, ""},
		{"GET", "/v1/executions/" + pending.ID, "", 200, ""},
	}
	for _, c := range accepted {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			if res := ts.send(strictRequest(c)); res.status != c.status {
				t.Fatalf("got %s, want %d", res, c.status)
			}
		})
	}
	// The pending action is still pending: no refused answer touched it.
	if got := ts.execution(pending.ID).State; got != api.ExecutionStateAwaitingApproval {
		t.Fatalf("the execution with a pending action is %s", got)
	}
}

func strictRequest(c strictCase) request {
	req := request{method: c.method, path: c.path}
	if c.method == http.MethodPost {
		req.body = ptr(c.body)
	}
	return req
}

// tagOf is the tag of a stream's cursors (what precedes the position), from a JSON page.
func tagOf(t *testing.T, ts *testServer, path string) string {
	t.Helper()
	page := decodeBody[api.StreamEventList](t, ts.get(path+"?after=0"))
	tag, _, ok := strings.Cut(page.NextCursor, "-")
	if !ok {
		t.Fatalf("cursor %q has no tag", page.NextCursor)
	}
	return tag
}
