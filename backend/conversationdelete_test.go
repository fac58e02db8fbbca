package backend_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// forgetful is a scripted provider that keeps conversation state: it records which
// conversations it was asked to forget and names one state key for each.
type forgetful struct {
	scripted
	mu     sync.Mutex
	forgot []string
}

func (p *forgetful) ForgetConversation(_ context.Context, conversationID string) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forgot = append(p.forgot, conversationID)
	return []string{conversationID}, nil
}

func (p *forgetful) forgotten(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Contains(p.forgot, id)
}

// A conversation with a running execution is refused with 409 CONVERSATION_BUSY naming it, and
// nothing is erased; asked to cancel first, the runtime cancels it (reason "conversation
// deleted"), erases the conversation and everything of it, and the id answers NOT_FOUND for
// every operation from then on — a start on it included — while the provider was asked to
// forget it.
func TestDeleteConversationRefusedWhileRunningThenCancelsWhenAsked(t *testing.T) {
	p := &forgetful{scripted: scripted{run: blockUntilCancelled}}
	rt := scriptedRuntime(t, backend.Options{}, p)
	ctx := ctxT(t)
	conv := newConversation(t, rt)
	first := startScripted(t, rt, conv)
	exec := startScripted(t, rt, conv)
	waitForEvent(t, rt, exec.ID, api.StandardEventTypeRunStarted)

	_, err := rt.DeleteConversation(ctx, conv, false)
	e := wantCode(t, err, backend.CodeConversationBusy, "")
	ids, _ := e.Details["executionIds"].([]any)
	if e.Details["conversationId"] != conv || len(ids) < 1 || !slices.Contains(ids, any(exec.ID)) {
		t.Fatalf("CONVERSATION_BUSY details %v: want the conversation and %s", e.Details, exec.ID)
	}
	if x := getExecution(t, rt, exec.ID); x.State.Terminal() {
		t.Fatalf("a refused delete ended the execution: %s", x.State)
	}
	if _, err := rt.GetConversation(ctx, conv); err != nil {
		t.Fatalf("a refused delete erased the conversation: %v", err)
	}

	d, err := rt.DeleteConversation(ctx, conv, true)
	if err != nil {
		t.Fatalf("DeleteConversation with cancel: %v", err)
	}
	if d.ConversationID != conv || d.Executions != 2 || d.DeletedAt == "" {
		t.Fatalf("deletion %+v: want %s with 2 executions", d, conv)
	}
	notFound := func(what string, err error) {
		t.Helper()
		wantCode(t, err, backend.CodeNotFound, "")
	}
	_, err = rt.GetConversation(ctx, conv)
	notFound("GetConversation", err)
	for _, id := range []string{exec.ID, first.ID} {
		_, err = rt.GetExecution(ctx, id)
		notFound("GetExecution", err)
		_, _, err = rt.ListEvents(ctx, id, 0, 0)
		notFound("ListEvents", err)
		_, err = rt.ListArtifacts(ctx, id)
		notFound("ListArtifacts", err)
	}
	_, _, err = rt.StartExecution(ctx, startReq(conv, startOpts{provider: "scripted", input: "again"}))
	notFound("StartExecution", err)
	_, err = rt.DeleteConversation(ctx, conv, true)
	notFound("DeleteConversation again", err)
	if !p.forgotten(conv) {
		t.Fatal("the provider was not asked to forget the conversation")
	}
}

// Another tenant's conversation, and an unknown id, answer NOT_FOUND and nothing is erased.
func TestDeleteConversationOfAnotherTenantIsNotFound(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	alice := backend.WithTenant(ctxT(t), backend.Tenant{ID: "alice"})
	bob := backend.WithTenant(ctxT(t), backend.Tenant{ID: "bob"})
	c, err := rt.CreateConversation(alice, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = rt.DeleteConversation(bob, c.ID, true)
	wantCode(t, err, backend.CodeNotFound, "Conversation not found: "+c.ID)
	_, err = rt.DeleteConversation(bob, "conv_00000000000000000000000000000000", false)
	wantCode(t, err, backend.CodeNotFound, "")
	if _, err := rt.GetConversation(alice, c.ID); err != nil {
		t.Fatalf("another tenant's delete erased it: %v", err)
	}
}

// The tenant stream carries a conversation.deleted message where the erased conversation's
// entries were: a reader from the start meets the other conversation's events and the marker,
// never an event of the deleted one; a stream of the deleted conversation, opened before,
// ends with the marker.
func TestDeleteConversationLeavesAMarkerInTheStreams(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	ctx := ctxT(t)
	gone, kept := newConversation(t, rt), newConversation(t, rt)
	for _, conv := range []string{gone, kept} {
		finalOf(t, rt, start(t, rt, conv, startOpts{input: "hello"}).ID)
	}
	convStream, err := rt.OpenStream(ctx, backend.StreamRequest{ConversationID: gone, Cursor: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer convStream.Close()
	d, err := rt.DeleteConversation(ctx, gone, false)
	if err != nil {
		t.Fatal(err)
	}

	tenant, err := rt.OpenStream(ctx, backend.StreamRequest{Cursor: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer tenant.Close()
	var marker *api.ConversationDeleted
	keptEvents := 0
	for marker == nil || keptEvents == 0 {
		select {
		case <-tenant.Ready():
		case <-ctx.Done():
			t.Fatalf("no marker on the tenant stream (kept events %d)", keptEvents)
		}
		events, _, err := tenant.Read(100)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range events {
			if ev.Type == backend.ConversationDeletedEventType {
				marker = new(api.ConversationDeleted)
				if err := json.Unmarshal(ev.JSON, marker); err != nil {
					t.Fatal(err)
				}
				continue
			}
			var e api.RuntimeEvent
			if err := json.Unmarshal(ev.JSON, &e); err != nil {
				t.Fatal(err)
			}
			x, err := rt.GetExecution(ctx, e.ExecutionID)
			if err != nil || x.ConversationID != kept {
				t.Fatalf("the tenant stream sent %s of %s (%v): not of the kept conversation", e.Type, e.ExecutionID, err)
			}
			keptEvents++
		}
	}
	if marker.ConversationID != gone || marker.Executions != d.Executions || marker.Type != api.ConversationDeletedTypeConversationDeleted {
		t.Fatalf("marker %+v, want %s with %d executions", marker, gone, d.Executions)
	}

	// The conversation's own stream: whatever it read before, it ends with the marker.
	var last backend.Event
	for {
		select {
		case <-convStream.Ready():
		case <-ctx.Done():
			t.Fatal("the deleted conversation's stream did not end")
		}
		events, done, err := convStream.Read(100)
		if err != nil {
			t.Fatal(err)
		}
		if len(events) > 0 {
			last = events[len(events)-1]
		}
		if done {
			break
		}
	}
	if last.Type != backend.ConversationDeletedEventType {
		t.Fatalf("the deleted conversation's stream ended with %q, want the marker", last.Type)
	}
}

// A start while a delete cancels (here: the provider's cleanup hook starts the next turn)
// comes after the delete sealed the conversation: it is refused (CONVERSATION_BUSY, "being
// deleted"), and the delete goes through with the one execution it cancelled.
func TestDeleteConversationRefusesAStartDuringItsCancels(t *testing.T) {
	p := &cancelable{scripted: scripted{run: blockUntilCancelled}}
	rt := scriptedRuntime(t, backend.Options{}, p)
	ctx := ctxT(t)
	conv := newConversation(t, rt)
	var once sync.Once
	var slipErr error
	p.cancel = func(context.Context, string, string) error {
		once.Do(func() {
			_, _, slipErr = rt.StartExecution(ctx, startReq(conv, startOpts{provider: "scripted", input: "slipped in"}))
		})
		return nil
	}
	first := startScripted(t, rt, conv)
	waitForEvent(t, rt, first.ID, api.StandardEventTypeRunStarted)

	d, err := rt.DeleteConversation(ctx, conv, true)
	if err != nil {
		t.Fatalf("DeleteConversation with cancel: %v", err)
	}
	wantCode(t, slipErr, backend.CodeConversationBusy, sealedMessage(conv))
	if d.Executions != 1 || p.calls.Load() != 1 {
		t.Fatalf("deletion %+v after %d cancels: want the one execution, cancelled once", d, p.calls.Load())
	}
}
