package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// actorHeader carries the identity in these tests; behind Caddy it is a placeholder such as
// {http.auth.user.id}.
const actorHeader = "X-Test-User"

// The identity of the request that answered or cancelled is in the event's data; a request
// that names nobody records nothing and is served all the same.
func TestActorOfTheRequestIsRecorded(t *testing.T) {
	ts := newTestServer(t, Options{Actor: func(r *http.Request) string { return r.Header.Get(actorHeader) }})
	for _, who := range []string{"carol", ""} {
		as := map[string]string{actorHeader: who}
		approval := ts.start("approve me", `{"requireApproval":true}`)
		actionID := typed(ts.waitForEvent(approval.ID, api.StandardEventTypeActionRequired).Data.AsActionRequest()).ID
		requireStatus(t, ts.do(request{method: http.MethodPost, path: "/v1/executions/" + approval.ID + "/actions/" + actionID + ":respond",
			body: ptr(`{"approved":true}`), header: as}), http.StatusOK)
		ts.waitTerminal(approval.ID)

		running := ts.start("a b c d", `{"delayMs":10000}`)
		ts.waitForEvent(running.ID, api.StandardEventTypeRunStarted)
		requireStatus(t, ts.do(request{method: http.MethodPost, path: "/v1/executions/" + running.ID + ":cancel",
			body: ptr(`{"reason":"stop"}`), header: as}), http.StatusOK)

		actor := ""
		if who != "" {
			actor = fmt.Sprintf(`"actor":{"id":%q},`, who)
		}
		if got, want := dataOf(t, ts, approval.ID, api.StandardEventTypeActionResponded), fmt.Sprintf(`{"actionId":%q,%s"approved":true}`, actionID, actor); got != want {
			t.Errorf("as %q: action.responded data %s, want %s", who, got, want)
		}
		if got, want := dataOf(t, ts, running.ID, api.StandardEventTypeRunCancelled), fmt.Sprintf(`{%s"reason":"stop"}`, actor); got != want {
			t.Errorf("as %q: run.cancelled data %s, want %s", who, got, want)
		}
	}
}

// dataOf returns the data of id's event of type typ, as the JSON replay sends it.
func dataOf(t *testing.T, ts *testServer, id string, typ api.StandardEventType) string {
	t.Helper()
	for _, e := range ts.eventList(id, "").Events {
		if e.Type == typ {
			raw, err := json.Marshal(e.Data)
			if err != nil {
				t.Fatal(err)
			}
			return string(raw)
		}
	}
	t.Fatalf("%s has no %s", id, typ)
	return ""
}
