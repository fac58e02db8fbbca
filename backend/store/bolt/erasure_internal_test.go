package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/storetest"
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
