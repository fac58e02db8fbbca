package storetest

import (
	"fmt"
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Events come back in sequence order, after a sequence and up to a limit, with their bytes and
// types intact; one execution's events never mix with its neighbours' (ids sorting next to it).
func testEvents(t *testing.T, open func(t *testing.T) store.Store) {
	s := openStore(t, open)
	a, b, c := executionID(10), executionID(11), executionID(12)
	if last, err := s.LastSequence(b); err != nil || last != 0 {
		t.Fatalf("LastSequence of an execution without events: %d, %v", last, err)
	}
	// Out of order inside one batch, and over several batches.
	commit(t, s, &store.Batch{Events: append(deltas(b, 6, 10), deltas(b, 1, 5)...)})
	commit(t, s, &store.Batch{Events: append(deltas(a, 1, 3), deltas(c, 1, 2)...)})
	commit(t, s, &store.Batch{Events: []store.StoredEvent{event(b, 11, api.StandardEventTypeRunCompleted)}})

	all, err := s.Events(b, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(sequences(all)); got != "[1 2 3 4 5 6 7 8 9 10 11]" {
		t.Fatalf("Events(after 0): %s", got)
	}
	want := event(b, 11, api.StandardEventTypeRunCompleted).Event
	if last := all[10]; string(last.JSON) != string(want.JSON) || last.Type != want.Type || !last.Terminal() {
		t.Fatalf("event 11 came back as %+v (%s)", last, last.JSON)
	}
	if all[0].Type != api.StandardEventTypeOutputTextDelta {
		t.Fatalf("event 1 type %q", all[0].Type)
	}
	for _, tc := range []struct {
		after int64
		limit int
		want  string
	}{
		{0, 3, "[1 2 3]"}, {3, 2, "[4 5]"}, {9, 0, "[10 11]"}, {9, 10, "[10 11]"}, {11, 0, "[]"}, {100, 5, "[]"},
	} {
		got, err := s.Events(b, tc.after, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(sequences(got)) != tc.want {
			t.Errorf("Events(after %d, limit %d) = %v, want %s", tc.after, tc.limit, sequences(got), tc.want)
		}
	}
	for id, want := range map[string]int64{a: 3, b: 11, c: 2, executionID(13): 0, executionID(9): 0} {
		if last, err := s.LastSequence(id); err != nil || last != want {
			t.Errorf("LastSequence(%s) = %d, %v; want %d", id, last, err, want)
		}
	}
	if got, _ := s.Events(executionID(13), 0, 0); len(got) != 0 {
		t.Fatalf("events of an execution that has none: %v", sequences(got))
	}
}

// Artifacts come back by index, whatever the commit order; none is an empty list.
func testArtifacts(t *testing.T, open func(t *testing.T) store.Store) {
	s := openStore(t, open)
	id := executionID(20)
	art := func(i int) store.Artifact {
		return store.Artifact{Index: i, Artifact: api.Artifact{ID: fmt.Sprintf("art_%032x", i), ExecutionID: id,
			Name: fmt.Sprintf("a%d.txt", i), MediaType: "text/plain", Metadata: api.JSONObject{}, CreatedAt: createdAt(i)}}
	}
	got, err := s.Artifacts(id)
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Artifacts of none: %#v, %v (want an empty, non-nil list)", got, err)
	}
	commit(t, s, &store.Batch{Artifacts: []store.Artifact{art(2), art(0)}})
	commit(t, s, &store.Batch{Artifacts: []store.Artifact{art(1)}})
	commit(t, s, &store.Batch{Artifacts: []store.Artifact{{Index: 0, Artifact: api.Artifact{ID: "art_other", ExecutionID: executionID(21),
		Name: "o", MediaType: "text/plain", Metadata: api.JSONObject{}, CreatedAt: createdAt(0)}}}})
	got, err = s.Artifacts(id)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "artifacts", got, []api.Artifact{art(0).Artifact, art(1).Artifact, art(2).Artifact})
}
