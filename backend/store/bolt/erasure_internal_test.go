package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/storetest"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The erasure's contract on a real file, with every bucket of the file read after it.
func TestErasure(t *testing.T) {
	for name, opts := range map[string]Options{"Default": {}, "FrequentFolds": {IndexJournalLimit: 2, StreamIndexFold: 3}} {
		t.Run(name, func(t *testing.T) {
			storetest.Erasure(t, func(t *testing.T) store.Store {
				s, err := Open(t.TempDir(), opts)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}, fileTraces)
		})
	}
}

// fileTraces closes s and walks every bucket of its file, nested ones too, for a key or value
// that holds one of ids or the conversation's id. What the erasure keeps on purpose is read
// for what it is, not skipped: the tombstone (its bucket), the stream log's blocks (decoded:
// only a marker may name the conversation), the conversation index (only the marker's
// position), the outbox rows announcing the erasure (keyed by the conversation's id).
func fileTraces(t *testing.T, s store.Store, conv string, ids []string) []string {
	t.Helper()
	bs := s.(*Store)
	if err := bs.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(filepath.Join(bs.Dir(), FileName), 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	all := append([]string{conv}, ids...)
	var found []string
	holds := func(b []byte) string {
		for _, id := range all {
			if bytes.Contains(b, []byte(id)) {
				return id
			}
		}
		return ""
	}
	err = db.View(func(tx *bbolt.Tx) error {
		markers := map[int64]bool{}
		if err := tx.Bucket(bucketStreamLog).ForEach(func(k, v []byte) error {
			var block logBlock
			if err := decodeLogBlock(int64(binary.BigEndian.Uint64(k)), v, &block); err != nil {
				return err
			}
			for i, h := range block.entries {
				pos := block.first + int64(i)
				switch {
				case len(h.execID) == 0 && string(h.scope[1]) == conv:
					markers[pos] = true
				case holds(h.execID) != "" || holds(h.scope[1]) != "" || holds(h.scope[0]) != "":
					found = append(found, fmt.Sprintf("stream log entry %d: %s of %s", pos, h.execID, h.scope[1]))
				}
			}
			return nil
		}); err != nil {
			return err
		}
		var walk func(path string, b *bbolt.Bucket) error
		walk = func(path string, b *bbolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				if v == nil && b.Bucket(k) != nil {
					return walk(path+"/"+string(k), b.Bucket(k))
				}
				id := holds(append(bytes.Clone(k), v...))
				switch {
				case id == "":
				case path == "/"+string(bucketTombstones) && string(k) == conv:
				case path == "/"+string(bucketStreamLog): // decoded above
				case path == "/"+string(bucketOutbox) && bytes.HasPrefix(k, []byte(conv)) && id == conv:
				case path == "/"+string(bucketStreamByConversation) && id == conv && onlyMarkers(k, v, conv, markers):
				default:
					found = append(found, fmt.Sprintf("%s: key %q holds %s", path, k, id))
				}
				return nil
			})
		}
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error { return walk("/"+string(name), b) })
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// onlyMarkers reports whether the conversation index key k of conv names only marker positions.
func onlyMarkers(k, v []byte, conv string, markers map[int64]bool) bool {
	if !bytes.HasPrefix(k, append([]byte(conv), 0)) || len(k) != len(conv)+9 {
		return false
	}
	base := int64(binary.BigEndian.Uint64(k[len(conv)+1:]))
	n, m := binary.Uvarint(v)
	v = v[m:]
	for range n {
		d, m := binary.Uvarint(v)
		if m <= 0 || !markers[base+int64(d)] {
			return false
		}
		v = v[m:]
	}
	return true
}

// After an erasure the file opens again with the marker where it was, and the positions that
// wait for the conversation index are rebuilt from the blocks without the erased entries (holes
// name no conversation), so a later fold indexes only the marker of the erased conversation.
func TestErasureAcrossReopenAndFold(t *testing.T) {
	// With a fold bound of 7, six events and the marker reach it in the erasure's own
	// transaction: its fold must leave out the erased positions that waited in memory. With 8,
	// the erasure does not fold, and the positions it erased must leave the waiting list, or
	// the next commit's fold would index them.
	for bound, mark := range map[int]int64{7: 7, 8: 0} {
		t.Run(fmt.Sprint("fold bound ", bound), func(t *testing.T) { testErasureAcrossReopenAndFold(t, bound, mark) })
	}
}

func testErasureAcrossReopenAndFold(t *testing.T, bound int, mark int64) {
	dir := t.TempDir()
	conv, other := "conv_"+strings.Repeat("a", 32), "conv_"+strings.Repeat("b", 32)
	exec := func(n int, conv string) store.Execution {
		return store.Execution{Tenant: "t", Execution: api.Execution{ID: fmt.Sprintf("exec_%032x", n), ConversationID: conv,
			ProviderID: "mock", State: api.ExecutionStateSucceeded, CreatedAt: "2026-11-30T12:00:00.000Z", UpdatedAt: "2026-11-30T12:00:00.000Z"}}
	}
	events := func(rec store.Execution) []store.StoredEvent {
		var out []store.StoredEvent
		for seq := int64(1); seq <= 3; seq++ {
			out = append(out, store.StoredEvent{ExecutionID: rec.Execution.ID, Scope: store.ScopeOf(rec),
				Event: store.Event{Sequence: seq, Type: api.StandardEventTypeOutputTextDelta, JSON: []byte(`{}`)}})
		}
		return out
	}
	s, err := Open(dir, Options{StreamIndexFold: bound})
	if err != nil {
		t.Fatal(err)
	}
	a, b := exec(1, conv), exec(2, conv)
	if err := s.Commit(&store.Batch{Conversations: []store.Conversation{{Tenant: "t", Conversation: api.Conversation{ID: conv}}},
		Executions: []store.Execution{a, b}, Events: append(events(a), events(b)...)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(&store.Batch{Erasures: []store.ConversationErasure{{Tenant: "t", ConversationID: conv, At: time.Now()}}}); err != nil {
		t.Fatal(err)
	}
	c := exec(3, other)
	if err := s.Commit(&store.Batch{Executions: []store.Execution{c}, Events: events(c)}); err != nil {
		t.Fatal(err)
	}
	checkErasedLog(t, s, conv, mark, "[7:a:true 8:b:false 9:b:false 10:b:false]")
	// Opened again, the waiting positions come from the blocks (holes name no conversation).
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{StreamIndexFold: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d := exec(4, other)
	if err := s.Commit(&store.Batch{Executions: []store.Execution{d}, Events: events(d)}); err != nil {
		t.Fatal(err)
	}
	checkErasedLog(t, s, conv, 13, "[7:a:true 8:b:false 9:b:false 10:b:false 11:b:false 12:b:false 13:b:false]")
}

// checkErasedLog: the conversation's read finds only the marker (7), the whole log is want,
// and the conversation index, folded up to indexed, names only the marker.
func checkErasedLog(t *testing.T, s *Store, conv string, indexed int64, want string) {
	t.Helper()
	for _, q := range []store.LogQuery{{ConversationID: conv, AnyTenant: true}, {AnyTenant: true}} {
		page, err := s.ReadLog(q)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range page.Entries {
			got = append(got, fmt.Sprintf("%d:%s:%v", e.Position, e.Scope.ConversationID[len(e.Scope.ConversationID)-1:], e.Erased != nil))
		}
		w := want
		if q.ConversationID != "" {
			w = "[7:a:true]"
		}
		if fmt.Sprint(got) != w {
			t.Errorf("ReadLog(%+v) = %v, want %s", q, got, w)
		}
	}
	err := s.db.View(func(tx *bbolt.Tx) error {
		mark, err := readPosition(tx.Bucket(bucketMeta), metaStreamIndexed, 0)
		if mark != indexed || err != nil {
			t.Errorf("the index holds positions up to %d (%v), want %d: the fold did not run", mark, err, indexed)
		}
		prefix := append([]byte(conv), 0)
		c := tx.Bucket(bucketStreamByConversation).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if !onlyMarkers(k, v, conv, map[int64]bool{7: true}) {
				t.Errorf("the index names erased positions of the conversation: key %x, value %x", k, v)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The seal's contract on a real file.
func TestSeal(t *testing.T) {
	storetest.Seal(t, func(t *testing.T) store.Store {
		s, err := Open(t.TempDir(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
