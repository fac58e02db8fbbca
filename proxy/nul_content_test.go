package proxy

import (
	"net/http"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/internal/testutil"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Issue 44 item 6: a NUL inside free content — an execution's input and config, a
// conversation's metadata, an answer's value, and what the agent makes of them (its text, its
// final output, an artifact's name) — is kept as sent on both stores (docs/protocol.md, "NUL").
// PostgreSQL's text refuses a NUL byte and its jsonb the \u0000 escape; the records are json
// (the escaped text) and the events bytea, so nothing here may end in a 500 or in an execution
// that cannot commit.
func TestNULInFreeContentIsKeptOnBothStores(t *testing.T) {
	for _, s := range []struct {
		name string
		open func(t *testing.T) storeUnderTest
	}{{"bolt", boltUnderTest}, {"postgres", postgresUnderTest}} {
		t.Run(s.name, func(t *testing.T) {
			var logs testutil.LockedBuffer
			testNULInFreeContent(t, s.open(t).serve(t, &logs, nil))
		})
	}
}

func testNULInFreeContent(t *testing.T, ts *testServer) {
	res := ts.post("/v1/conversations", `{"metadata":{"k\u0000":"v\u0000"}}`)
	requireStatus(t, res, http.StatusCreated)
	conv := decodeBody[api.Conversation](t, res)
	if got := ts.get("/v1/conversations/" + conv.ID); !strings.Contains(string(got.body), `{"k\u0000":"v\u0000"}`) {
		t.Fatalf("conversation metadata not kept: %s", got)
	}

	res = ts.post("/v1/executions", `{"conversationId":"`+conv.ID+`","providerId":"mock","input":"a\u0000b",`+
		`"config":{"prefix":"\u0000","artifactName":"n\u0000","requestInput":true}}`)
	requireStatus(t, res, http.StatusAccepted)
	exec := decodeBody[api.Execution](t, res)
	action := ts.waitForEvent(exec.ID, api.StandardEventTypeActionRequired)
	actionID := typed(action.Data.AsActionRequest()).ID
	requireStatus(t, ts.post("/v1/executions/"+exec.ID+"/actions/"+actionID+":respond",
		`{"decision":"respond","value":"c\u0000d","metadata":{"m":"\u0000"}}`), http.StatusOK)

	final := ts.waitTerminal(exec.ID)
	if final.State != api.ExecutionStateSucceeded {
		t.Fatalf("execution %s: %+v", final.State, final.Error)
	}
	if final.Input != "a\x00b" || final.FinalOutput == nil || *final.FinalOutput != "\x00a\x00b c\x00d" {
		t.Fatalf("input %q, final output %v", final.Input, final.FinalOutput)
	}
	var text strings.Builder
	artifact := ""
	for _, e := range ts.eventList(exec.ID, "").Events {
		switch e.Type {
		case api.StandardEventTypeOutputTextDelta:
			text.WriteString(typed(e.Data.AsTextDeltaData()).Text)
		case api.StandardEventTypeArtifactCreated:
			artifact = typed(e.Data.AsArtifact()).Name
		}
	}
	if text.String() != "\x00a\x00b c\x00d" || artifact != "n\x00" {
		t.Fatalf("events: text %q, artifact %q", text.String(), artifact)
	}
	// The conversation's stream and the listing carry it too.
	if res := ts.get("/v1/conversations/" + conv.ID + "/events?after=0"); !strings.Contains(string(res.body), `c\u0000d`) {
		t.Fatalf("conversation stream: %s", res)
	}
	requireStatus(t, ts.get("/v1/executions?state=succeeded"), http.StatusOK)
}
