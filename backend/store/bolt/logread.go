package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Reading the stream log: a page of entries after a position, of the whole log or of one
// conversation (its index up to the fold mark, then the blocks after it).

// logReader is one ReadLog: the query, the page it fills and the decoded block it reads from.
type logReader struct {
	q        store.LogQuery
	limit    int
	page     store.LogPage
	log      *bbolt.Cursor
	events   *bbolt.Bucket
	tx       *bbolt.Tx
	block    logBlock
	eventKey []byte
}

// ReadLog reads committed entries in position order (store.StreamLog).
func (s *Store) ReadLog(q store.LogQuery) (store.LogPage, error) {
	r := &logReader{q: q, limit: q.Limit, page: store.LogPage{Reached: q.After}}
	if r.limit <= 0 {
		r.limit = store.DefaultLogPage
	}
	scan := q.Scan
	if scan <= 0 {
		scan = 16 * r.limit
	}
	err := s.db.View(func(tx *bbolt.Tx) error {
		oldest, err := readOldest(tx.Bucket(bucketMeta))
		if err != nil {
			return err
		}
		if q.After < oldest-1 {
			return fmt.Errorf("%w (after %d; the oldest kept is %d)", store.ErrCursorExpired, q.After, oldest)
		}
		r.log = tx.Bucket(bucketStreamLog).Cursor()
		r.events, r.tx = tx.Bucket(bucketEvents), tx
		scanned := 0
		if q.ConversationID != "" {
			done, err := r.readConversation(tx, &scanned, scan)
			if done || err != nil {
				return err
			}
			// Past the index's mark, the blocks themselves.
			indexed, err := readPosition(tx.Bucket(bucketMeta), metaStreamIndexed, 0)
			if err != nil {
				return err
			}
			from := max(q.After, indexed)
			for k, v := blockAt(r.log, from+1); k != nil; k, v = r.log.Next() {
				if err := decodeLogBlock(int64(binary.BigEndian.Uint64(k)), v, &r.block); err != nil {
					return err
				}
				for i := range r.block.entries {
					pos := r.block.first + int64(i)
					if pos <= from {
						continue
					}
					r.page.Reached = pos
					// The entries of other conversations are not counted against the scan
					// bound: there are at most StreamIndexFold of them, and counting them
					// would return empty pages of a conversation that has more to come.
					if string(r.block.entries[i].scope[1]) == q.ConversationID {
						more, err := r.visit(pos, &r.block.entries[i])
						if err != nil {
							return err
						}
						if scanned++; !more || scanned >= scan {
							return nil
						}
					}
				}
			}
		} else {
			for k, v := blockAt(r.log, q.After+1); k != nil; k, v = r.log.Next() {
				if err := decodeLogBlock(int64(binary.BigEndian.Uint64(k)), v, &r.block); err != nil {
					return err
				}
				for i := range r.block.entries {
					pos := r.block.first + int64(i)
					if pos <= q.After {
						continue
					}
					more, err := r.visit(pos, &r.block.entries[i])
					if err != nil {
						return err
					}
					if scanned++; !more || scanned >= scan {
						return nil
					}
				}
			}
		}
		// The end of what this transaction sees: every position up to the log's last one was
		// examined (those of other conversations included).
		if k, v := r.log.Last(); len(k) == 8 {
			first := int64(binary.BigEndian.Uint64(k))
			if _, n, _, err := decodeLogBlockHead(first, v); err == nil {
				r.page.Reached = max(r.page.Reached, first+int64(n)-1)
			}
		}
		return nil
	})
	if err != nil {
		return store.LogPage{}, err
	}
	return r.page, nil
}

// readConversation walks the conversation's index keys after the cursor (the positions up to
// the index's mark); done is true when the page filled or the scan bound was reached (Reached
// is then where it stopped).
func (r *logReader) readConversation(tx *bbolt.Tx, scanned *int, scan int) (done bool, err error) {
	prefix := append([]byte(r.q.ConversationID), 0)
	c := tx.Bucket(bucketStreamByConversation).Cursor()
	// The index block that may hold the first position after the cursor starts at or before it.
	k, v := c.Seek(conversationLogKey(nil, r.q.ConversationID, r.q.After+1))
	if pk, pv := c.Prev(); pk != nil && bytes.HasPrefix(pk, prefix) && len(pk) == len(prefix)+8 {
		k, v = pk, pv
	} else {
		k, v = c.Seek(conversationLogKey(nil, r.q.ConversationID, r.q.After+1))
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(k) != len(prefix)+8 {
			continue // another conversation's id that starts with this one and a 0 byte
		}
		base := int64(binary.BigEndian.Uint64(k[len(prefix):]))
		n, m := binary.Uvarint(v)
		if m <= 0 {
			return false, badBlock(base)
		}
		v = v[m:]
		for range n {
			d, m := binary.Uvarint(v)
			if m <= 0 {
				return false, badBlock(base)
			}
			v = v[m:]
			pos := base + int64(d)
			if pos <= r.q.After {
				continue
			}
			h, err := r.entry(pos)
			if err != nil {
				return false, err
			}
			if h == nil {
				continue // trimmed while its index key stayed (never written so; tolerated)
			}
			more, err := r.visit(pos, h)
			if err != nil {
				return false, err
			}
			if *scanned++; !more || *scanned >= scan {
				return true, nil
			}
		}
	}
	return false, nil
}

// entry is the log's entry at pos, from the decoded block when it holds it; nil when gone.
func (r *logReader) entry(pos int64) (*logEntryHead, error) {
	if len(r.block.entries) == 0 || pos < r.block.first || pos > r.block.last() {
		k, v := blockAt(r.log, pos)
		if k == nil {
			return nil, nil
		}
		if err := decodeLogBlock(int64(binary.BigEndian.Uint64(k)), v, &r.block); err != nil {
			return nil, err
		}
		if pos < r.block.first || pos > r.block.last() {
			r.block.entries = r.block.entries[:0]
			return nil, nil
		}
	}
	return &r.block.entries[pos-r.block.first], nil
}

// visit examines the entry at pos: filters, then the event joined; false stops the read.
func (r *logReader) visit(pos int64, h *logEntryHead) (bool, error) {
	r.page.Reached = pos
	if len(h.execID) == 0 && len(h.scope[1]) == 0 {
		return true, nil // a hole: an erased conversation's entry (logerase.go)
	}
	if !r.q.AnyTenant && string(h.scope[0]) != r.q.Tenant {
		return true, nil
	}
	if len(h.execID) == 0 {
		return r.visitMarker(pos, h)
	}
	entry := store.LogEntry{Position: pos, ExecutionID: string(h.execID), Scope: store.StreamScope{
		Tenant: string(h.scope[0]), ConversationID: string(h.scope[1]), ProviderID: string(h.scope[2])}}
	entry.Event.Sequence = h.sequence
	entry.Event.Type = api.StandardEventType(h.typ)
	if r.q.Match != nil && !r.q.Match(&entry) {
		return true, nil
	}
	r.eventKey = append(append(r.eventKey[:0], h.execID...), 0, 0, 0, 0, 0, 0, 0, 0)
	binary.BigEndian.PutUint64(r.eventKey[len(h.execID):], uint64(h.sequence))
	raw := r.events.Get(r.eventKey)
	if raw == nil {
		return true, nil // its execution was deleted
	}
	ev, err := decodeEventValue(h.sequence, raw)
	if err != nil {
		return false, err
	}
	ev.JSON = bytes.Clone(ev.JSON) // bbolt's bytes live only as long as the transaction
	entry.Event = ev
	r.page.Entries = append(r.page.Entries, entry)
	return len(r.page.Entries) < r.limit, nil
}

// visitMarker examines an erasure's marker at pos (logerase.go): its tombstone joined.
func (r *logReader) visitMarker(pos int64, h *logEntryHead) (bool, error) {
	entry := store.LogEntry{Position: pos, Scope: store.StreamScope{Tenant: string(h.scope[0]), ConversationID: string(h.scope[1])}}
	t, found, err := tombstoneIn(r.tx, entry.Scope.ConversationID)
	if err != nil {
		return false, err
	}
	if !found {
		t = store.Tombstone{ConversationID: entry.Scope.ConversationID, Tenant: entry.Scope.Tenant, DeletedAt: erasedAt(r.block.ms)}
	}
	entry.Erased = &t
	if r.q.Match != nil && !r.q.Match(&entry) {
		return true, nil
	}
	r.page.Entries = append(r.page.Entries, entry)
	return len(r.page.Entries) < r.limit, nil
}
