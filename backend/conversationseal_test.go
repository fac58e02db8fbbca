package backend_test

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/bolt"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// sealedMessage is what a start into (or a rename of) a conversation being deleted answers.
func sealedMessage(conv string) string { return "Conversation " + conv + " is being deleted" }

// A client that starts turns on a conversation back to back, without pause, cannot hold off
// a delete that cancels: the delete seals the conversation first, so every start after the
// seal is refused and the cancels have nothing new behind them. Without the seal each round
// of cancels found newer starts and the delete answered CONVERSATION_BUSY after five.
func TestDeleteConversationWithCancelWinsOverBackToBackStarts(t *testing.T) {
	p := &cancelable{scripted: scripted{run: blockUntilCancelled}}
	rt := scriptedRuntime(t, backend.Options{}, p)
	ctx := ctxT(t)
	conv := newConversation(t, rt)
	first := startScripted(t, rt, conv)
	waitForEvent(t, rt, first.ID, api.StandardEventTypeRunStarted)

	var started atomic.Int64
	var refused error
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // starts until one is refused (or the test gives up)
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, _, err := rt.StartExecution(ctx, startReq(conv, startOpts{provider: "scripted", input: "again"})); err != nil {
				refused = err
				return
			}
			started.Add(1)
		}
	}()
	for started.Load() < 3 { // the starts are under way before the delete
		runtime.Gosched()
	}

	d, err := rt.DeleteConversation(ctx, conv, true)
	if err != nil {
		close(stop)
		<-done
		t.Fatalf("DeleteConversation with cancel while starts come back to back: %v", err)
	}
	<-done // the starter stops by itself: its next start is refused
	var e *backend.Error
	switch e = wantCodeIn(t, refused, backend.CodeConversationBusy, backend.CodeNotFound); e.Code {
	case backend.CodeConversationBusy:
		if e.Message != sealedMessage(conv) {
			t.Fatalf("a start after the seal: %q, want %q", e.Message, sealedMessage(conv))
		}
	}
	if want := int(started.Load()) + 1; d.Executions != want {
		t.Fatalf("deletion %+v: want every execution that was started (%d)", d, want)
	}
	_, err = rt.GetConversation(ctx, conv)
	wantCode(t, err, backend.CodeNotFound, "")
}

// wantCodeIn asserts err is a *backend.Error with one of codes.
func wantCodeIn(t testing.TB, err error, codes ...backend.Code) *backend.Error {
	t.Helper()
	for _, code := range codes {
		if e, ok := err.(*backend.Error); ok && e.Code == code {
			return e
		}
	}
	t.Fatalf("error %v (%T): want a *backend.Error with one of %v", err, err, codes)
	return nil
}

// A delete whose node died between the seal and the erasure (here: a seal committed to the
// file directly, dated an hour ago — past the grace a delete under way has — and the runtime
// closed) is finished when the runtime opens again: its
// executions have all ended, so the sealed conversation is erased instead of kept sealed,
// with its content, for ever.
func TestSealedConversationIsErasedWhenTheRuntimeOpens(t *testing.T) {
	dir := t.TempDir()
	rt := openRuntime(t, dir, backend.Options{})
	ctx := ctxT(t)
	conv := newConversation(t, rt)
	x := start(t, rt, conv, startOpts{input: "hello"})
	if _, final := finalOf(t, rt, x.ID); final.State != api.ExecutionStateSucceeded {
		t.Fatalf("execution ended %s", final.State)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(&store.Batch{Seals: []store.ConversationErasure{{ConversationID: conv, At: time.Now().Add(-time.Hour)}}}); err != nil {
		t.Fatalf("seal: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	rt = openRuntime(t, dir, backend.Options{})
	_, err = rt.GetConversation(ctx, conv)
	wantCode(t, err, backend.CodeNotFound, "")
	_, err = rt.GetExecution(ctx, x.ID)
	wantCode(t, err, backend.CodeNotFound, "")
}

// A conversation sealed moments ago (its delete may be under way on another node) is left to
// that delete when the runtime opens. Meanwhile it still reads; a start and a rename are
// refused as being deleted; a DELETE asked again continues the deletion.
func TestSealedConversationReadsRefusesStartsAndADeleteFinishesIt(t *testing.T) {
	dir := t.TempDir()
	rt := openRuntime(t, dir, backend.Options{})
	ctx := ctxT(t)
	conv := newConversation(t, rt)
	x := start(t, rt, conv, startOpts{input: "hello"})
	finalOf(t, rt, x.ID)
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(&store.Batch{Seals: []store.ConversationErasure{{ConversationID: conv, At: time.Now()}}}); err != nil {
		t.Fatalf("seal: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	rt = openRuntime(t, dir, backend.Options{})
	if _, err := rt.GetConversation(ctx, conv); err != nil {
		t.Fatalf("a sealed conversation does not read: %v", err)
	}
	getExecution(t, rt, x.ID)
	_, _, err = rt.StartExecution(ctx, startReq(conv, startOpts{input: "more"}))
	wantCode(t, err, backend.CodeConversationBusy, sealedMessage(conv))
	title := "renamed"
	_, err = rt.UpdateConversation(ctx, conv, backend.ConversationUpdate{Title: &title})
	wantCode(t, err, backend.CodeConversationBusy, sealedMessage(conv))

	d, err := rt.DeleteConversation(ctx, conv, false)
	if err != nil || d.Executions != 1 {
		t.Fatalf("DELETE of a sealed conversation: %+v, %v; want it erased with its one execution", d, err)
	}
	_, err = rt.GetConversation(ctx, conv)
	wantCode(t, err, backend.CodeNotFound, "")
}
