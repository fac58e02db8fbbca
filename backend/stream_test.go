package backend_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// readStream reads a live stream until it has n events (or fails the test at the timeout).
func readStream(t *testing.T, st *backend.Stream, n int) (events []backend.Event, ids []string) {
	t.Helper()
	ctx := ctxT(t)
	for len(events) < n {
		ready := st.Ready()
		batch, done, err := st.Read(256)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		for i, ev := range batch {
			events = append(events, ev)
			ids = append(ids, st.EventID(i, ev))
		}
		if done {
			break
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-ready:
		case <-ctx.Done():
			t.Fatalf("waited for %d events, have %d", n, len(events))
		}
	}
	return events, ids
}

// One call opens a stream of each scope: an execution's (ids are sequences), a conversation's
// and a tenant's (ids are cursors of their scope; a tenant's can also be paged), with the same
// events in the same order.
func TestOpenStreamOpensEveryScope(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	conv := newConversation(t, rt)
	exec := start(t, rt, conv, startOpts{input: "hello"})
	want := collect(t, rt, exec.ID, 0)

	ofExec, err := rt.OpenStream(ctxT(t), backend.StreamRequest{ExecutionID: exec.ID})
	if err != nil {
		t.Fatalf("OpenStream(execution): %v", err)
	}
	defer ofExec.Close()
	events, ids := readStream(t, ofExec, len(want))
	if len(events) != len(want) {
		t.Fatalf("the execution's stream sent %d events, want %d", len(events), len(want))
	}
	for i, ev := range events {
		if ids[i] != strconv.FormatInt(ev.Sequence, 10) {
			t.Fatalf("event %d: id %q, want its sequence %d", i, ids[i], ev.Sequence)
		}
		if _, _, shared := ofExec.Shared(i, ev); shared {
			t.Fatalf("an execution's event %d is shared across streams", i)
		}
	}
	if !ofExec.Exhausted() {
		t.Fatal("a finished execution's stream read to its end is not exhausted")
	}

	ofConv, err := rt.OpenStream(ctxT(t), backend.StreamRequest{ConversationID: conv, Cursor: "0"})
	if err != nil {
		t.Fatalf("OpenStream(conversation): %v", err)
	}
	defer ofConv.Close()
	convEvents, convIDs := readStream(t, ofConv, len(want))
	for i, ev := range convEvents {
		if got := decode(t, ev); got.Type != want[i].Type || got.Sequence != want[i].Sequence {
			t.Fatalf("conversation event %d: %s #%d, want %s #%d", i, got.Type, got.Sequence, want[i].Type, want[i].Sequence)
		}
		tag, pos, shared := ofConv.Shared(i, ev)
		if !shared || backend.FormatStreamCursor(tag, pos) != convIDs[i] {
			t.Fatalf("conversation event %d: shared %v as %q, id %q", i, shared, backend.FormatStreamCursor(tag, pos), convIDs[i])
		}
	}
	if !ofConv.Conversation() || ofConv.Exhausted() || ofConv.AwaitingAction() {
		t.Fatal("a conversation's stream: not a conversation's, or exhausted, or awaiting an action")
	}

	page, err := rt.OpenStream(ctxT(t), backend.StreamRequest{Cursor: "0", Page: true})
	if err != nil {
		t.Fatalf("OpenStream(tenant page): %v", err)
	}
	paged, next, err := page.Page(1000)
	if err != nil || len(paged) != len(want) {
		t.Fatalf("the tenant's page: %d events, %v; want %d", len(paged), err, len(want))
	}
	rest, err := rt.OpenStream(ctxT(t), backend.StreamRequest{Cursor: next, Page: true})
	if err != nil {
		t.Fatalf("OpenStream(tenant page after %q): %v", next, err)
	}
	if more, again, err := rest.Page(1000); err != nil || len(more) != 0 || again != next {
		t.Fatalf("the page after the end: %d events, next %q, %v; want none, %q", len(more), again, err, next)
	}

	// The tenant's cursor is not the conversation's: refused as another stream's, naming
	// where it came from.
	_, err = rt.OpenStream(ctxT(t), backend.StreamRequest{ConversationID: conv, LastEventID: next})
	var ce *backend.CursorError
	if !errors.As(err, &ce) || !ce.InLastEventID {
		t.Fatalf("a tenant's cursor on a conversation's stream: %v, want a CursorError of Last-Event-ID", err)
	}
}

// The request is checked in the protocol's order: the cursors, then the caller's own refusal,
// then the conversation, then the cursor's place in the log.
func TestOpenStreamChecksInOrder(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	conv := newConversation(t, rt)
	refused := errors.New("the caller's refusal")
	var ce *backend.CursorError

	_, err := rt.OpenStream(ctxT(t), backend.StreamRequest{ConversationID: "conv_unknown", Cursor: "nope", Invalid: refused})
	if !errors.As(err, &ce) || ce.InLastEventID {
		t.Fatalf("a malformed after: %v, want a CursorError of after", err)
	}
	_, err = rt.OpenStream(ctxT(t), backend.StreamRequest{ConversationID: "conv_unknown", Cursor: "0", Invalid: refused})
	if !errors.Is(err, refused) {
		t.Fatalf("a refused request of an unknown conversation: %v, want the refusal", err)
	}
	_, err = rt.OpenStream(ctxT(t), backend.StreamRequest{ConversationID: "conv_unknown"})
	wantCode(t, err, backend.CodeNotFound, "")

	exec := start(t, rt, conv, startOpts{input: "x"})
	collect(t, rt, exec.ID, 0)
	st, err := rt.OpenStream(ctxT(t), backend.StreamRequest{ConversationID: conv, Page: true})
	if err != nil {
		t.Fatal(err)
	}
	_, next, err := st.Page(1)
	if err != nil {
		t.Fatal(err)
	}
	// A cursor of this stream beyond its log's end was never given out.
	tag, digits, _ := strings.Cut(next, "-")
	pos, _ := strconv.ParseInt(digits, 10, 64)
	ahead := tag + "-" + strconv.FormatInt(pos+1000, 10)
	_, err = rt.OpenStream(ctxT(t), backend.StreamRequest{ConversationID: conv, Cursor: ahead})
	if !errors.As(err, &ce) || ce.InLastEventID {
		t.Fatalf("a cursor ahead of the log: %v, want a CursorError of after", err)
	}
}

// A live stream whose cursor had expired starts with the gap (resuming after the oldest entry
// kept); a page from it is CURSOR_EXPIRED, saying where to resume.
func TestOpenStreamSendsTheGapFirst(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	conv := newConversation(t, rt)
	collect(t, rt, start(t, rt, conv, startOpts{input: "x"}).ID, 0)
	st, err := rt.OpenStream(ctxT(t), backend.StreamRequest{ConversationID: conv, Page: true})
	if err != nil {
		t.Fatal(err)
	}
	_, first, err := st.Page(1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := backend.StreamHub(rt).Log().TrimLog(time.Now().Add(time.Second)); err != nil {
		t.Fatalf("TrimLog: %v", err)
	}
	collect(t, rt, start(t, rt, conv, startOpts{input: "y"}).ID, 0)

	page, err := rt.OpenStream(ctxT(t), backend.StreamRequest{ConversationID: conv, Cursor: first, Page: true})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = page.Page(10)
	expired := wantCode(t, err, backend.CodeCursorExpired, "")
	resume, _ := expired.Details["resumeAfter"].(string)

	live, err := rt.OpenStream(ctxT(t), backend.StreamRequest{ConversationID: conv, LastEventID: first})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	events, ids := readStream(t, live, 2)
	var gap api.StreamGap
	if events[0].Type != backend.StreamGapEventType || json.Unmarshal(events[0].JSON, &gap) != nil {
		t.Fatalf("first message %s %s, want the gap", events[0].Type, events[0].JSON)
	}
	if gap.RequestedCursor != first || gap.ResumeAfter != resume || ids[0] != resume {
		t.Fatalf("gap %+v with id %q; want requested %q, resume after %q (the page's)", gap, ids[0], first, resume)
	}
	if _, _, shared := live.Shared(0, events[0]); shared {
		t.Fatal("the gap message is shared across streams")
	}
	if events[1].Type == backend.StreamGapEventType {
		t.Fatal("the gap was sent twice")
	}
}
