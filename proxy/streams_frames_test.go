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

// The shared frames hold at most two generations: the memory stays bounded however many
// entries pass, and the newest frames are kept.
func TestSharedFramesStayBounded(t *testing.T) {
	var c sharedFrames
	ev := backend.Event{Type: api.StandardEventTypeOutputTextDelta, JSON: []byte(`{"data":{"delta":"` + strings.Repeat("x", 1000) + `"}}`)}
	const n = 3 * frameGenerationBytes / 1000
	for pos := int64(1); pos <= n; pos++ {
		f := c.frame("abcdefabcdef", pos, ev)
		if want := fmt.Sprintf("id: abcdefabcdef-%d\nevent: output.text.delta\ndata: %s\n\n", pos, ev.JSON); string(f) != want {
			t.Fatalf("frame of %d:\n%q\nwant\n%q", pos, f, want)
		}
	}
	held := 0
	for _, gen := range []map[frameKey][]byte{c.cur, c.old} {
		for _, f := range gen {
			held += len(f)
		}
	}
	if held > 2*frameGenerationBytes {
		t.Fatalf("%d bytes of frames held after %d entries; the bound is %d", held, n, 2*frameGenerationBytes)
	}
	if _, ok := c.cur[frameKey{"abcdefabcdef", n}]; !ok {
		t.Fatal("the newest frame is not kept")
	}
	if _, ok := c.cur[frameKey{"abcdefabcdef", 1}]; ok {
		t.Fatal("the oldest frame is still kept")
	}
}
