package clustertest

import (
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// A delete on node a of a conversation whose execution node b runs (waiting for an approval):
// refused while it runs; with cancelFirst, a cancels it through b (a command to its owner,
// reason "conversation deleted") and erases the conversation; then both nodes answer NOT_FOUND
// for the conversation, the execution and its events, and b refuses a start on it.
func TestDeleteOnOneNodeCancelsWhatTheOtherRuns(t *testing.T) {
	nodes := startCluster(t, clusterOpts{}, "a", "b")
	a, b := nodes[0], nodes[1]
	conv := newConversation(t, a)
	exec := start(t, b, mockRequest(conv, "waits for an answer", api.JSONObject{"requireApproval": true}))
	approvalAction(t, a, exec.ID)

	_, err := a.rt.DeleteConversation(ctxT(t), conv, false)
	wantCode(t, err, backend.CodeConversationBusy)
	d, err := a.rt.DeleteConversation(ctxT(t), conv, true)
	if err != nil {
		t.Fatalf("DeleteConversation with cancel on a: %v", err)
	}
	if d.Executions != 1 {
		t.Fatalf("deletion %+v, want one execution", d)
	}
	for _, n := range nodes {
		_, err := n.rt.GetConversation(ctxT(t), conv)
		wantCode(t, err, backend.CodeNotFound)
		_, err = n.rt.GetExecution(ctxT(t), exec.ID)
		wantCode(t, err, backend.CodeNotFound)
		_, _, err = n.rt.ListEvents(ctxT(t), exec.ID, 0, 0)
		wantCode(t, err, backend.CodeNotFound)
	}
	_, _, err = b.rt.StartExecution(ctxT(t), mockRequest(conv, "after", nil))
	wantCode(t, err, backend.CodeNotFound)
}
