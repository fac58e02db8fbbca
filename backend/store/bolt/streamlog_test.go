package bolt_test

import (
	"fmt"
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/bolt"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The stream log across reopens: the identity and the numbering stay, and the positions that
// waited for the conversation index when the file was closed are found again (rebuilt from the
// blocks), before and after the next fold.
func TestStreamLogAcrossReopens(t *testing.T) {
	dir := t.TempDir()
	open := func() *bolt.Store {
		s, err := bolt.Open(dir, bolt.Options{StreamIndexFold: 10})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	emit := func(s *bolt.Store, exec, conv int, seq int64) {
		t.Helper()
		id := fmt.Sprintf("exec_%032x", exec)
		raw := fmt.Sprintf(`{"data":{},"executionId":%q,"id":"%s:%d","sequence":%d,"time":"2026-12-01T00:00:00.000Z","type":"output.text.delta"}`, id, id, seq, seq)
		err := s.Commit(&store.Batch{Events: []store.StoredEvent{{ExecutionID: id,
			Scope: &store.StreamScope{ConversationID: fmt.Sprintf("conv_%032x", conv)},
			Event: store.Event{Sequence: seq, Type: api.StandardEventTypeOutputTextDelta, JSON: []byte(raw)}}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	count := func(s *bolt.Store, conv int) int {
		t.Helper()
		n := 0
		for after := int64(0); ; {
			page, err := s.ReadLog(store.LogQuery{ConversationID: fmt.Sprintf("conv_%032x", conv), After: after, Limit: 4})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Entries) == 0 {
				return n
			}
			for _, e := range page.Entries {
				if e.Scope.ConversationID != fmt.Sprintf("conv_%032x", conv) {
					t.Fatalf("conversation %d's read returned %s", conv, e.Scope.ConversationID)
				}
			}
			n += len(page.Entries)
			after = page.Reached
		}
	}
	s := open()
	id := s.StreamLogID()
	for seq := int64(1); seq <= 7; seq++ { // below the fold
		emit(s, 1, 1+int(seq)%2, seq)
	}
	s.Close()
	s = open()
	if s.StreamLogID() != id {
		t.Fatalf("the log's identity changed across a reopen: %s, then %s", id, s.StreamLogID())
	}
	if b, _ := s.StreamLogBounds(); b.Last != 7 {
		t.Fatalf("last position %d after a reopen; want 7", b.Last)
	}
	if a, b := count(s, 1), count(s, 2); a != 3 || b != 4 {
		t.Fatalf("before the fold: conversation 1 has %d, 2 has %d; want 3 and 4", a, b)
	}
	for seq := int64(8); seq <= 25; seq++ { // past the fold (twice), with the reopened waiting positions
		emit(s, 1, 1+int(seq)%2, seq)
	}
	if a, b := count(s, 1), count(s, 2); a != 12 || b != 13 {
		t.Fatalf("after the folds: conversation 1 has %d, 2 has %d; want 12 and 13", a, b)
	}
	s.Close()
	s = open()
	defer s.Close()
	if a, b := count(s, 1), count(s, 2); a != 12 || b != 13 {
		t.Fatalf("after a reopen: conversation 1 has %d, 2 has %d; want 12 and 13", a, b)
	}
}

// A conversation's read past the index's mark examines the blocks of every conversation: a
// page must not come back empty because other conversations' entries filled its scan bound
// (the JSON replay would take it for the end).
func TestConversationReadPastTheIndexSkipsOtherConversations(t *testing.T) {
	s, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var batch store.Batch
	for seq := int64(1); seq <= 100; seq++ {
		batch.Events = append(batch.Events, logEvent(2, 2, seq))
	}
	batch.Events = append(batch.Events, logEvent(1, 1, 1))
	if err := s.Commit(&batch); err != nil {
		t.Fatal(err)
	}
	page, err := s.ReadLog(store.LogQuery{ConversationID: fmt.Sprintf("conv_%032x", 1), Limit: 1})
	if err != nil || len(page.Entries) != 1 || page.Entries[0].Position != 101 {
		t.Fatalf("conversation 1, limit 1: %+v, %v; want its one entry at 101", page, err)
	}
}

func logEvent(exec, conv int, seq int64) store.StoredEvent {
	id := fmt.Sprintf("exec_%032x", exec)
	raw := fmt.Sprintf(`{"data":{},"executionId":%q,"id":"%s:%d","sequence":%d,"time":"2026-12-01T00:00:00.000Z","type":"output.text.delta"}`, id, id, seq, seq)
	return store.StoredEvent{ExecutionID: id, Scope: &store.StreamScope{ConversationID: fmt.Sprintf("conv_%032x", conv)},
		Event: store.Event{Sequence: seq, Type: api.StandardEventTypeOutputTextDelta, JSON: []byte(raw)}}
}
