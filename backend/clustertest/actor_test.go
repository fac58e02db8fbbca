package clustertest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// An answer and a cancel made on B for an execution A runs travel to A as commands; A records
// the identity of B's callers, not nobody's (the identity travels in the command's body).
func TestActorTravelsWithCommands(t *testing.T) {
	nodes := startCluster(t, clusterOpts{}, "a", "b")
	a, b := nodes[0], nodes[1]
	conv := newConversation(t, a)

	answered := start(t, a, mockRequest(conv, "answered on b", api.JSONObject{"requireApproval": true}))
	actionID := approvalAction(t, b, answered.ID)
	if _, err := b.rt.RespondToAction(backend.WithActor(ctxT(t), "alice"), answered.ID, actionID, approve(true)); err != nil {
		t.Fatalf("RespondToAction on b: %v", err)
	}
	responded := eventOn(t, a, answered.ID, api.StandardEventTypeActionResponded)
	if got, want := string(responded.JSON), fmt.Sprintf(`"data":{"actionId":%q,"actor":{"id":"alice"},"approved":true}`, actionID); !strings.Contains(got, want) {
		t.Errorf("action.responded on a\n got %s\nwant it to hold %s", got, want)
	}

	cancelled := start(t, a, mockRequest(conv, "cancelled on b", api.JSONObject{"requireApproval": true}))
	approvalAction(t, b, cancelled.ID)
	if _, err := b.rt.CancelExecution(backend.WithActor(ctxT(t), "bob"), cancelled.ID, nil); err != nil {
		t.Fatalf("CancelExecution on b: %v", err)
	}
	last := eventOn(t, a, cancelled.ID, api.StandardEventTypeRunCancelled)
	if got, want := string(last.JSON), `"data":{"actor":{"id":"bob"}}`; !strings.Contains(got, want) {
		t.Errorf("run.cancelled on a\n got %s\nwant it to hold %s", got, want)
	}
}

// eventOn returns the event of type typ in id's complete log as n replays it.
func eventOn(t testing.TB, n *node, id string, typ api.StandardEventType) backend.Event {
	t.Helper()
	events := follow(t, n, id, 0)
	for _, e := range events {
		if e.Type == typ {
			return e
		}
	}
	t.Fatalf("%s on %s has no %s: %s", id, n.name, typ, typesOf(events))
	return backend.Event{}
}

// An automatic answer made on B — an approval's expiry, a standing rule — reaches A as what it
// is: the actor's kind travels with the command, so A's action.responded says kind "expiry"
// (the nemesis found it bare, {"id":"expiry"}, when the expiry ran on a node that did not own
// the execution, seed 20261203).
func TestAutomaticActorKeepsItsKindAcrossNodes(t *testing.T) {
	nodes := startCluster(t, clusterOpts{}, "a", "b")
	a, b := nodes[0], nodes[1]
	conv := newConversation(t, a)
	exec := start(t, a, mockRequest(conv, "expired on b", api.JSONObject{"requireApproval": true}))
	actionID := approvalAction(t, b, exec.ID)
	kind := api.ActorKindExpiry
	expiry := backend.WithActorOf(ctxT(t), api.Actor{ID: "expiry", Kind: &kind})
	if _, err := b.rt.RespondToAction(expiry, exec.ID, actionID, approve(false)); err != nil {
		t.Fatalf("RespondToAction on b: %v", err)
	}
	responded := eventOn(t, a, exec.ID, api.StandardEventTypeActionResponded)
	if got, want := string(responded.JSON), `"actor":{"id":"expiry","kind":"expiry"}`; !strings.Contains(got, want) {
		t.Errorf("action.responded on a\n got %s\nwant it to hold %s", got, want)
	}
}
