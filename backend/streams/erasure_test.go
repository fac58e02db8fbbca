package streams_test

import (
	"sync"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/streams"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// An erasure's marker, as it reaches the hub, takes the conversation's entries out of the ring
// (the store deleted them in the same transaction) and tells OnErased first: a reader from the
// start, even one narrowed to lifecycle events, meets the other conversation's entries and the
// marker, and none of the erased conversation's.
func TestErasureMarkerDropsTheConversationFromTheRing(t *testing.T) {
	var mu sync.Mutex
	var told []store.Tombstone
	st, h := newHub(t, streams.Options{OnErased: func(ts store.Tombstone) {
		mu.Lock()
		told = append(told, ts)
		mu.Unlock()
	}})
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for _, n := range []int{1, 2} {
		c := store.Conversation{Conversation: api.Conversation{ID: convID(n), CreatedAt: "2026-12-01T00:00:00.000Z", Metadata: api.JSONObject{}}, Tenant: "acme"}
		if err := st.Commit(&store.Batch{Conversations: []store.Conversation{c}}); err != nil {
			t.Fatal(err)
		}
	}
	emit(t, st, 1, "acme", 1, 1, 1, api.StandardEventTypeRunQueued)
	emit(t, st, 2, "acme", 2, 1, 1, api.StandardEventTypeRunQueued)
	emit(t, st, 1, "acme", 1, 2, 3, api.StandardEventTypeOutputTextDelta)
	emit(t, st, 2, "acme", 2, 2, 2, api.StandardEventTypeRunCompleted)
	if err := st.Commit(&store.Batch{Erasures: []store.ConversationErasure{{Tenant: "acme", ConversationID: convID(1), At: at}}}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []streams.Filter{{Tenant: "acme"}, {Tenant: "acme", LifecycleOnly: true}} {
		sub, err := h.Subscribe(f, 0)
		if err != nil {
			t.Fatal(err)
		}
		got := drain(t, sub, 3)
		if got[0].Event.Sequence != 1 || got[1].Event.Sequence != 2 || got[0].ExecutionID != execID(2) || got[1].ExecutionID != execID(2) {
			t.Fatalf("%+v: read %v, want execution 2's two entries before the marker", f, keys(got))
		}
		m := got[2]
		if m.Erased == nil || m.Erased.ConversationID != convID(1) || m.Scope.ConversationID != convID(1) || m.Scope.Tenant != "acme" {
			t.Fatalf("%+v: third entry %+v, want conversation 1's marker", f, m)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(told) != 1 || told[0].ConversationID != convID(1) {
		t.Fatalf("OnErased told %+v, want conversation 1 once", told)
	}
}
