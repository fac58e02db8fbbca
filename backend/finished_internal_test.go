package backend

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"runtime"
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// finishedExample is a finished execution as the runtime hands it to the cache: a record with
// a nested config, capabilities, timestamps and a final output, and seven events whose JSON
// was encoded one event at a time (as the hot window holds them).
func finishedExample(id string) (store.Execution, []Event) {
	output := "Echo: hello " + id
	started, ended := "2026-12-03T20:00:00.001Z", "2026-12-03T20:00:00.009Z"
	rec := store.Execution{
		Execution: api.Execution{
			ID: id, ConversationID: "conv_" + id, ProviderID: "mock", Input: "hello " + id,
			CreatedAt: "2026-12-03T20:00:00.000Z", StartedAt: &started, EndedAt: &ended,
			State: api.ExecutionStateSucceeded, FinalOutput: &output,
			RequiredCapabilities: []string{"streaming"},
			EffectiveConfig: api.JSONObject{
				"temperature": 0.5, "model": "m-" + id,
				"nested": map[string]any{"list": []any{1.0, "two", true, nil}, "deep": map[string]any{"k": "v"}},
			},
		},
		Tenant: "tenant-a",
	}
	types := []api.StandardEventType{
		api.StandardEventTypeRunStarted, api.StandardEventTypeOutputTextDelta, api.StandardEventTypeOutputTextDelta,
		api.StandardEventTypeOutputTextDelta, api.StandardEventTypeOutputTextDone, api.StandardEventTypeProviderEvent,
		api.StandardEventTypeRunCompleted,
	}
	events := make([]Event, len(types))
	for i, typ := range types {
		seq := int64(i + 1)
		events[i] = Event{Sequence: seq, Type: typ, JSON: textEvent(typ, fmt.Sprintf("word %d", seq)).encode(id, seq, ended)}
	}
	return rec, events
}

// A cached execution is served exactly as it was added: its snapshot equals the record, its
// events have the same sequences, types and bytes, in every window of after.
func TestFinishedLogServesWhatWasAdded(t *testing.T) {
	rec, events := finishedExample("exec_a")
	c := newFinishedLogs(1 << 20)
	c.add(rec, events)
	l, ok := c.get("exec_a")
	if !ok {
		t.Fatal("the log was not kept")
	}
	h := finishedHandle{log: l}
	got, err := h.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rec.Execution) {
		t.Fatalf("snapshot\n%+v\nwant\n%+v", got, rec.Execution)
	}
	got.EffectiveConfig["nested"].(map[string]any)["deep"].(map[string]any)["k"] = "changed"
	if again, _ := h.Snapshot(context.Background()); !reflect.DeepEqual(again, rec.Execution) {
		t.Fatal("changing a snapshot changed the cached execution")
	}
	if l.tenant != "tenant-a" || l.conversationID != "conv_exec_a" || l.id != "exec_a" {
		t.Fatalf("tenant %q, conversation %q, id %q", l.tenant, l.conversationID, l.id)
	}
	for after := int64(-1); after <= int64(len(events))+1; after++ {
		for _, limit := range []int{0, 1, 3, 100} {
			read := l.after(after, limit)
			from := min(max(after, 0), int64(len(events)))
			to := int64(len(events))
			if limit > 0 {
				to = min(to, from+int64(limit))
			}
			want := events[from:to]
			if len(read) != len(want) {
				t.Fatalf("after(%d, %d): %d events, want %d", after, limit, len(read), len(want))
			}
			for i := range want {
				if read[i].Sequence != want[i].Sequence || read[i].Type != want[i].Type || !bytes.Equal(read[i].JSON, want[i].JSON) {
					t.Fatalf("after(%d, %d)[%d] = %d %s %s, want %d %s %s", after, limit, i,
						read[i].Sequence, read[i].Type, read[i].JSON, want[i].Sequence, want[i].Type, want[i].JSON)
				}
			}
		}
	}
	src := finishedSource{log: l}
	if src.Exhausted(int64(len(events))-1) || !src.Exhausted(int64(len(events))) {
		t.Fatalf("a source of %d events is exhausted at %d: %v, at %d: %v", len(events),
			len(events)-1, src.Exhausted(int64(len(events))-1), len(events), src.Exhausted(int64(len(events))))
	}
}

// The cache of finished executions is most of the server's live heap, and every collection
// marks it: an entry is a few objects, whatever its record and log hold (not the record's
// strings, maps and slices and an object per event).
func TestFinishedLogKeepsFewHeapObjectsPerExecution(t *testing.T) {
	const n = 2000
	c := newFinishedLogs(1 << 30)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("exec_%032x", i)
	}
	objects := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapObjects
	}
	before := objects()
	for _, id := range ids {
		c.add(finishedExample(id))
	}
	after := objects()
	runtime.KeepAlive(ids)
	const most = 8
	per := float64(int64(after)-int64(before)) / n
	t.Logf("%.1f heap objects per cached execution", per)
	if per > most {
		t.Fatalf("the cache keeps %.1f heap objects per finished execution; want at most %d", per, most)
	}
	if _, ok := c.get(ids[0]); !ok {
		t.Fatal("an entry was evicted")
	}
}

// A conversation's erasure drops its executions' entries and only theirs.
func TestFinishedLogsRemoveAConversationsEntries(t *testing.T) {
	c := newFinishedLogs(1 << 20)
	for _, id := range []string{"exec_1", "exec_2", "exec_3"} {
		rec, events := finishedExample(id)
		if id != "exec_3" {
			rec.Execution.ConversationID = "conv_erased"
		}
		c.add(rec, events)
	}
	c.removeConversation("conv_erased")
	for id, kept := range map[string]bool{"exec_1": false, "exec_2": false, "exec_3": true} {
		if _, ok := c.get(id); ok != kept {
			t.Fatalf("%s kept %v after its conversation's erasure, want %v", id, ok, kept)
		}
	}
	if want := c.byID["exec_3"].Value.(*finishedLog).size; c.bytes != want {
		t.Fatalf("%d bytes counted, want %d (the one entry left)", c.bytes, want)
	}
}
