package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// TestBrowserFollowsAConversationOnOneConnection: Chromium, on the API's own origin over
// HTTP/1.1 (six connections per origin), follows a conversation with ten live executions
// through one EventSource on GET /v1/conversations/{id}/events, and still has connections to
// answer their ten approvals with fetch. With one EventSource per execution the seventh stream
// would wait for a free connection and the approvals behind it. Against the real binary.
func TestBrowserFollowsAConversationOnOneConnection(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary and a browser; run without -short")
	}
	const live = 10
	srv := startCaddy(t, buildCaddy(t), instanceEnv(t))
	c, err := sdk.New(srv.url)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	conv, err := c.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	p := openBrowser(t)
	p.navigate(srv.url + "/console/")
	p.evaluateVoid(fmt.Sprintf(`(() => {
		const seen = window.followed = {events: [], opens: 0, errors: 0, pending: {}};
		const source = window.source = new EventSource(%q);
		source.onopen = () => { seen.opens++; };
		source.onerror = () => { seen.errors++; };
		for (const type of ['run.queued', 'run.started', 'output.text.delta', 'output.text.done', 'action.required', 'action.responded', 'run.completed', 'run.failed', 'run.cancelled']) {
			source.addEventListener(type, (e) => {
				const ev = JSON.parse(e.data);
				seen.events.push({id: e.lastEventId, type: ev.type, executionId: ev.executionId, sequence: ev.sequence});
				if (ev.type === 'action.required') seen.pending[ev.executionId] = ev.data.actionId ?? ev.data.id;
			});
		}
	})()`, srv.url+"/v1/conversations/"+conv.ID+"/events"))
	p.waitJS(`window.followed.opens === 1`)

	ids := map[string]bool{}
	for i := range live {
		exec, err := c.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock",
			Input: fmt.Sprintf("turn %d of a conversation", i), Config: api.JSONObject{"requireApproval": true}})
		if err != nil {
			t.Fatal(err)
		}
		ids[exec.ID] = true
	}
	// Ten executions wait for their approvals, all followed on the one stream.
	p.waitJS(fmt.Sprintf(`Object.keys(window.followed.pending).length === %d`, live))
	// The page answers them through fetch, beside the open stream.
	approved := evaluateAwait[int](p, `(async () => {
		let n = 0;
		for (const [exec, action] of Object.entries(window.followed.pending)) {
			const res = await fetch('/v1/executions/' + exec + '/actions/' + action + ':respond', {
				method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({approved: true})});
			if (res.ok) n++;
		}
		return n;
	})()`)
	if approved != live {
		t.Fatalf("the page answered %d of %d approvals", approved, live)
	}
	p.waitJS(fmt.Sprintf(`window.followed.events.filter(e => e.type === 'run.completed').length === %d`, live))
	type seenEvent struct {
		ID          string `json:"id"`
		Type        string `json:"type"`
		ExecutionID string `json:"executionId"`
		Sequence    int64  `json:"sequence"`
	}
	got := evaluate[struct {
		Events []seenEvent `json:"events"`
		Opens  int         `json:"opens"`
		Errors int         `json:"errors"`
	}](p, `window.followed`)
	if got.Opens != 1 || got.Errors != 0 {
		t.Fatalf("the EventSource opened %d times with %d errors; want one connection throughout", got.Opens, got.Errors)
	}
	// Exactly the stored events of the ten executions, each once, in each one's order.
	last := map[string]int64{}
	for _, e := range got.Events {
		if !ids[e.ExecutionID] || e.Sequence != last[e.ExecutionID]+1 || e.ID == "" {
			t.Fatalf("event %s:%d (id %q) after sequence %d", e.ExecutionID, e.Sequence, e.ID, last[e.ExecutionID])
		}
		last[e.ExecutionID] = e.Sequence
	}
	for id := range ids {
		stored, err := c.ListEvents(ctx, id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(stored.Events)) != last[id] {
			t.Fatalf("%s: the browser saw %d events, the server stored %d", id, last[id], len(stored.Events))
		}
	}
	p.evaluateVoid(`window.source.close()`)
}
