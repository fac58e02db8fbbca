package backend_test

import (
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/webhook"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// action.expired: a subscription that lists it is told of an expiry's answer with that type; one
// that lists action.responded gets the event as it is; one that lists both gets action.expired
// once; a person's answer is no expiry.
func TestWebhookActionExpired(t *testing.T) {
	type receiver struct {
		events []string
		rc     *webhookReceiver
		url    string
	}
	receivers := []*receiver{{events: []string{"action.expired"}}, {events: []string{"action.responded"}}, {events: []string{"action.responded", "action.expired"}}}
	var subs []webhook.Subscription
	for _, r := range receivers {
		rc, srv := newReceiver(t, nil)
		r.rc, r.url = rc, srv.URL
		subs = append(subs, webhook.Subscription{URL: srv.URL, Secret: webhookSecret, Events: r.events})
	}
	rt := openRuntime(t, "", backend.Options{Webhooks: notifier(t, webhook.Config{Subscriptions: subs})})
	conv := newConversation(t, rt)
	one := 1
	expires := startReq(conv, startOpts{input: "x", config: api.JSONObject{"requireApproval": true}})
	expires.ActionTimeoutSeconds = &one
	expired, _, err := rt.StartExecution(ctxT(t), expires)
	if err != nil {
		t.Fatal(err)
	}
	collect(t, rt, expired.ID, 0)
	answered := start(t, rt, conv, startOpts{input: "y", config: api.JSONObject{"requireApproval": true}})
	action := typed(waitForEvent(t, rt, answered.ID, api.StandardEventTypeActionRequired).Data.AsActionRequest())
	if _, err := rt.RespondToAction(ctxT(t), answered.ID, action.ID, approve(true)); err != nil {
		t.Fatal(err)
	}
	collect(t, rt, answered.ID, 0)

	want := [][]string{
		{expired.ID + " action.expired"},
		{expired.ID + " action.responded", answered.ID + " action.responded"},
		{expired.ID + " action.expired", answered.ID + " action.responded"},
	}
	for i, r := range receivers {
		eventually(t, "the notifications of "+r.url, func() bool { return len(r.rc.delivered()) == len(want[i]) })
		var got []string
		for _, d := range r.rc.delivered() {
			got = append(got, d.payload.Data.Execution.ID+" "+string(d.payload.Type))
			if d.payload.Data.Event.Type != api.StandardEventTypeActionResponded {
				t.Errorf("the event of a %s notification is %s", d.payload.Type, d.payload.Data.Event.Type)
			}
			checkAgainstSchema(t, "WebhookPayload", d.body)
		}
		if !sameSet(got, want[i]) {
			t.Errorf("subscription %v got %v, want %v", r.events, got, want[i])
		}
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		if seen[s] == 0 {
			return false
		}
		seen[s]--
	}
	return true
}
