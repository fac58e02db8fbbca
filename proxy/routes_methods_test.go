package proxy

import (
	"net/http"
	"strings"
	"testing"
)

// Every resource answers a method it does not serve with 405 and its Allow header (or, for an
// action without its verb, 404), and the query is checked before that only for the methods a
// route takes at all (a read's own parameters; a POST takes none): the routes table keeps what
// the switch it replaced answered.
func TestEveryRouteRefusesOtherMethods(t *testing.T) {
	ts := newTestServer(t, Options{})
	const x = "/v1/executions/exec_x"
	for _, c := range []struct {
		method, path string
		status       int
		allow        string
		says         string // in the body of a 400
	}{
		{http.MethodPost, "/readyz", 405, allowRead, ""},
		{http.MethodPut, "/healthz", 405, allowRead, ""},
		{http.MethodPost, "/v1/runtime", 405, allowRead, ""},
		{http.MethodPost, "/v1/runtime/capabilities", 405, allowRead, ""},
		{http.MethodPut, "/v1/conversations", 405, allowReadWrite, ""},
		{http.MethodPost, "/v1/conversations/conv_x", 405, allowReadPatch, ""},
		// A PATCH takes no query parameter, as a POST.
		{http.MethodPatch, "/v1/conversations/conv_x?x=1", 400, "", "this route takes no query parameter"},
		{http.MethodGet, "/v1/conversations?state=running", 400, "", "it takes after, limit, metadataKey, metadataValue, activeAfter, activeBefore"},
		{http.MethodPut, "/v1/conversations/conv_x/executions", 405, allowRead, ""},
		{http.MethodPost, "/v1/conversations/conv_x/events", 405, allowRead, ""},
		{http.MethodDelete, "/v1/events", 405, allowRead, ""},
		{http.MethodPatch, "/v1/executions", 405, allowReadWrite, ""},
		{http.MethodPut, x, 405, allowRead, ""},
		{http.MethodGet, x + ":cancel", 405, allowWrite, ""},
		{http.MethodHead, x + ":cancel", 405, allowWrite, ""},
		{http.MethodPost, x + "/artifacts", 405, allowRead, ""},
		{http.MethodDelete, x + "/events", 405, allowRead, ""},
		{http.MethodGet, x + "/actions/act_y:respond", 405, allowWrite, ""},
		{http.MethodGet, x + "/actions/act_y", 404, "", ""},
		{http.MethodPut, x + "/actions/act_y", 404, "", ""},
		{http.MethodPost, "/v1/openapi.yaml", 405, allowRead, ""},
		{http.MethodPost, "/v1/openapi.json", 405, allowRead, ""},
		{http.MethodPost, "/v1/usage", 405, allowRead, ""},
		{http.MethodPost, "/v1/actions", 405, allowRead, ""},
		{http.MethodDelete, "/v1/action-rules", 405, allowReadWrite, ""},
		{http.MethodPost, "/v1/action-rules/rule_x", 405, allowRead, ""},
		{http.MethodGet, "/v1/action-rules/rule_x:revoke", 405, allowWrite, ""},
		{http.MethodGet, "/v1/nowhere", 404, "", ""},
		{http.MethodPut, "/v1/nowhere", 404, "", ""},
		// The query of a method the route does not take is not looked at: 405, not 400.
		{http.MethodPut, "/v1/runtime?unknown=1", 405, allowRead, ""},
		// A POST takes no query parameter: refused before its 405.
		{http.MethodPost, "/v1/runtime?unknown=1", 400, "", "this route takes no query parameter"},
		{http.MethodPost, "/v1/executions?state=running", 400, "", "this route takes no query parameter"},
		// A read takes its route's parameters only.
		{http.MethodGet, "/v1/usage?after=1", 400, "", "it takes from, to, groupBy, limit"},
		{http.MethodGet, "/v1/conversations/conv_x/events?conversation=c", 400, "", "it takes after, limit, type, lifecycle, provider\""},
		{http.MethodGet, "/v1/action-rules?state=x", 400, "", "it takes conversationId, active"},
	} {
		res := ts.send(request{method: c.method, path: c.path}) // some are in no document: nothing to validate against
		if res.status != c.status || res.header.Get("Allow") != c.allow || !strings.Contains(string(res.body), c.says) {
			t.Errorf("%s %s: %d with Allow %q, %s; want %d with Allow %q, saying %q", c.method, c.path, res.status, res.header.Get("Allow"), res.body, c.status, c.allow, c.says)
		}
	}
}
