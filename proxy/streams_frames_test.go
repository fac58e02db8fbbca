package proxy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Streams of different scopes send the same entries under their own cursors, and a stream that
// sends frames other streams made already sends exactly what it would have framed itself: a
// conversation's stream, the tenant's, and the tenant's narrowed to the conversation, each read
// twice (the second time every frame is shared), agree message for message.
func TestSharedFramesKeepEachStreamsCursors(t *testing.T) {
	ts := newTestServer(t, Options{})
	conv := ts.createConversation()
	ts.startIn("", conv, "one two three")
	ts.startIn("", conv, "four five")
	paths := map[string]string{
		"conversation":             "/v1/conversations/" + conv + "/events?after=0",
		"tenant":                   "/v1/events?after=0",
		"tenant, the conversation": "/v1/events?after=0&conversation=" + conv,
	}
	first := map[string][]logMessage{}
	for name, path := range paths {
		first[name] = ts.openLogStream(path, nil).readUntil(2)
	}
	for name, path := range paths {
		again := ts.openLogStream(path, nil).readUntil(2)
		if len(again) != len(first[name]) {
			t.Fatalf("%s: %d messages, then %d", name, len(first[name]), len(again))
		}
		for i, m := range again {
			if f := first[name][i]; m.id != f.id || m.typ != f.typ || m.data != f.data {
				t.Fatalf("%s, message %d: %s %s, then %s %s", name, i, f.id, f.typ, m.id, m.typ)
			}
		}
	}
	conversation, tenant, narrowed := first["conversation"], first["tenant"], first["tenant, the conversation"]
	for i := range conversation {
		if conversation[i].data != tenant[i].data || tenant[i].id != narrowed[i].id {
			t.Fatalf("message %d: the tenant's streams disagree (%s, %s) or carry another event", i, tenant[i].id, narrowed[i].id)
		}
		convTag, convPos, _ := strings.Cut(conversation[i].id, "-")
		tenantTag, tenantPos, _ := strings.Cut(tenant[i].id, "-")
		if convTag == tenantTag || convPos != tenantPos {
			t.Fatalf("message %d: the conversation's cursor %s and the tenant's %s should differ in tag only", i, conversation[i].id, tenant[i].id)
		}
	}
}

// The shared frames are bounded: the newest positions keep their frames (one per kind of
// stream) and older ones give way; no stream is handed a frame of another tag or position; a
// frame too large to keep is still made.
func TestSharedFramesStayBounded(t *testing.T) {
	var c sharedFrames
	ev := backend.Event{Type: api.StandardEventTypeOutputTextDelta, JSON: []byte(`{"data":{"delta":"x"}}`)}
	want := func(tag string, pos int64, ev backend.Event) string {
		return fmt.Sprintf("id: %s-%d\nevent: %s\ndata: %s\n\n", tag, pos, ev.Type, ev.JSON)
	}
	const n = 3 * frameSlots
	for pos := int64(1); pos <= n; pos++ {
		for _, kind := range []struct {
			tag          string
			conversation bool
		}{{"aaaaaaaaaaaa", true}, {"bbbbbbbbbbbb", false}} {
			if f := c.frame(kind.tag, kind.conversation, pos, ev); string(f) != want(kind.tag, pos, ev) {
				t.Fatalf("frame of %s-%d:\n%q", kind.tag, pos, f)
			}
		}
	}
	kept := map[int64]int{}
	for i := range c.slots {
		if s := c.slots[i].Load(); s != nil {
			kept[s.pos]++
			if string(s.frame) != want(s.tag, s.pos, ev) {
				t.Fatalf("slot %d holds %q for %s-%d", i, s.frame, s.tag, s.pos)
			}
		}
	}
	if len(kept) != frameSlots/2 {
		t.Fatalf("%d positions kept; want the newest %d", len(kept), frameSlots/2)
	}
	for pos := int64(n - frameSlots/2 + 1); pos <= n; pos++ {
		if kept[pos] != 2 {
			t.Fatalf("position %d has %d frames kept; want both kinds", pos, kept[pos])
		}
	}
	// Another tag at a kept slot's position is framed anew, not handed the kept frame.
	if f := c.frame("cccccccccccc", true, n, ev); string(f) != want("cccccccccccc", n, ev) {
		t.Fatalf("another conversation's frame at a kept position: %q", f)
	}
	big := backend.Event{Type: ev.Type, JSON: []byte(`{"data":{"delta":"` + strings.Repeat("y", maxSharedFrame) + `"}}`)}
	if f := c.frame("aaaaaaaaaaaa", true, n+1, big); string(f) != want("aaaaaaaaaaaa", n+1, big) {
		t.Fatal("a frame too large to keep was not made")
	}
	if s := c.slots[(2*(n+1)+1)&(frameSlots-1)].Load(); s != nil && s.pos == n+1 {
		t.Fatal("a frame larger than maxSharedFrame was kept")
	}
}
