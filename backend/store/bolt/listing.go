package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend/store"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// executionLister is the store's part of the listing.
type executionLister interface {
	// ListExecutions returns at most q.Limit records, newest first, after q.After, and the
	// position to continue from when more may follow (nil on the last page).
	ListExecutions(q store.ListQuery) ([]store.Execution, *store.ListPosition, error)
}

func timeIndexKey(p store.ListPosition) []byte {
	return appendTimeIndexKey(make([]byte, 0, 8+len(p.ID)), p)
}

func appendTimeIndexKey(dst []byte, p store.ListPosition) []byte {
	dst = binary.BigEndian.AppendUint64(dst, p.CreatedMs)
	return append(dst, p.ID...)
}

// conversationIndexPrefix ends with 0x00, which no id contains, so one conversation's prefix
// is never the start of another's.
func conversationIndexPrefix(conversationID string) []byte {
	return append([]byte(conversationID), 0)
}

func conversationIndexKey(conversationID string, p store.ListPosition) []byte {
	return appendConversationIndexKey(make([]byte, 0, len(conversationID)+9+len(p.ID)), conversationID, p)
}

func appendConversationIndexKey(dst []byte, conversationID string, p store.ListPosition) []byte {
	dst = append(dst, conversationID...)
	return appendTimeIndexKey(append(dst, 0), p)
}

// stateValues are executions_by_time's values, one slice per state shared by every write
// (bbolt only reads a value, until the commit).
var stateValues = func() map[api.ExecutionState][]byte {
	m := map[api.ExecutionState][]byte{}
	for _, s := range []api.ExecutionState{api.ExecutionStateQueued, api.ExecutionStateStarting, api.ExecutionStateRunning,
		api.ExecutionStateAwaitingApproval, api.ExecutionStateAwaitingInput, api.ExecutionStateCancelling,
		api.ExecutionStateSucceeded, api.ExecutionStateFailed, api.ExecutionStateCancelled} {
		m[s] = []byte(s)
	}
	return m
}()

// stateValue is state's executions_by_time value.
func stateValue(state api.ExecutionState) []byte {
	if v, ok := stateValues[state]; ok {
		return v
	}
	return []byte(state)
}

// indexExecution writes (or rewrites, with its new state) rec's executions_by_time entry and,
// when it is new, its executions_by_conversation entry, through the journal.
func indexExecution(tx *bbolt.Tx, rec store.Execution, keys *keyArena, jt *journalTx) error {
	e := rec.Execution
	p := store.PositionOf(e)
	byTime, key := tx.Bucket(bucketExecutionsByTime), appendTimeIndexKey(keys.carve(8+len(p.ID)), p)
	isNew := byTime.Get(key) == nil // the right edge of the tree: a cheap look
	if err := byTime.Put(key, stateValue(e.State)); err != nil {
		return err
	}
	if !isNew {
		return nil
	}
	convKey := appendConversationIndexKey(keys.carve(len(e.ConversationID)+9+len(p.ID)), e.ConversationID, p)
	return jt.addConversation(e.ConversationID, convKey)
}

// indexExecutionNow writes rec's entries straight into both index buckets (a rebuild).
func indexExecutionNow(tx *bbolt.Tx, rec store.Execution) error {
	e := rec.Execution
	p := store.PositionOf(e)
	if err := tx.Bucket(bucketExecutionsByTime).Put(timeIndexKey(p), stateValue(e.State)); err != nil {
		return err
	}
	return tx.Bucket(bucketExecutionsByConversation).Put(conversationIndexKey(e.ConversationID, p), nil)
}

// unindexExecution removes rec's index entries (retention, after the journal was folded).
func unindexExecution(tx *bbolt.Tx, rec store.Execution) error {
	e := rec.Execution
	p := store.PositionOf(e)
	if err := tx.Bucket(bucketExecutionsByTime).Delete(timeIndexKey(p)); err != nil {
		return err
	}
	return tx.Bucket(bucketExecutionsByConversation).Delete(conversationIndexKey(e.ConversationID, p))
}

// buildListingIndex creates the index buckets from the records when they do not exist yet (a
// store written by a version without the listing). One transaction: a crash in the middle
// leaves no half-built index, and the next open starts over. Returns how many executions it
// indexed (0 when the index already existed).
func buildListingIndex(db *bbolt.DB) (int, error) {
	indexed := 0
	err := db.Update(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketExecutionsByTime) != nil && tx.Bucket(bucketExecutionsByConversation) != nil {
			return nil
		}
		for _, name := range [][]byte{bucketExecutionsByTime, bucketExecutionsByConversation} {
			if tx.Bucket(name) != nil {
				if err := tx.DeleteBucket(name); err != nil {
					return err
				}
			}
			if _, err := tx.CreateBucket(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		return tx.Bucket(bucketExecutions).ForEach(func(k, v []byte) error {
			var rec store.Execution
			if err := json.Unmarshal(v, &rec); err != nil {
				// A damaged record is not this migration's to judge: the store must still open
				// (recovery and reads report it); it is just not listed.
				return nil
			}
			indexed++
			return indexExecutionNow(tx, rec)
		})
	})
	return indexed, err
}

func (s *Store) ListExecutions(q store.ListQuery) ([]store.Execution, *store.ListPosition, error) {
	var (
		out    []store.Execution
		next   *store.ListPosition
		recent [][]byte
	)
	if q.ConversationID != "" {
		// Before the transaction begins: what the journal no longer holds, it sees folded.
		recent = s.journal.conversationKeys(q.ConversationID)
	}
	err := s.db.View(func(tx *bbolt.Tx) error {
		byTime := tx.Bucket(bucketExecutionsByTime)
		index, prefix := byTime, []byte(nil)
		if q.ConversationID != "" {
			index, prefix = tx.Bucket(bucketExecutionsByConversation), conversationIndexPrefix(q.ConversationID)
		}
		records := tx.Bucket(bucketExecutions)
		walk := newIndexWalk(index.Cursor(), prefix, q.After, recent)
		for k, fromJournal := walk.next(); k != nil; k, fromJournal = walk.next() {
			timeKey := k[len(prefix):]
			if q.States != nil {
				state := byTime.Get(timeKey) // the same key when index is byTime: a cheap look
				if state == nil || !q.States[api.ExecutionState(state)] {
					continue
				}
			}
			id := timeKey[8:]
			raw := records.Get(id)
			if raw == nil {
				if fromJournal {
					continue // deleted since the journal was read
				}
				return fmt.Errorf("index names execution %s, which has no record", id)
			}
			var rec store.Execution
			if err := json.Unmarshal(raw, &rec); err != nil {
				// Its tenant is unknown too: no caller's page shows it. Walks go on, as
				// ForEachExecution's do.
				if q.Undecodable != nil {
					q.Undecodable(string(id), fmt.Errorf("%w: %w", store.ErrUndecodable, err))
				}
				continue
			}
			if !recordInTenant(rec, q.Tenant) {
				continue
			}
			if len(out) == q.Limit {
				// One more matches: the page is full and is not the last one.
				last := store.PositionOf(out[len(out)-1].Execution)
				next = &last
				return nil
			}
			out = append(out, rec)
		}
		return nil
	})
	return out, next, err
}

// indexWalk yields an index's keys under prefix, newest first, before a position, merged with
// the journal's keys of the same index (recent, newest first).
type indexWalk struct {
	c      *bbolt.Cursor
	prefix []byte
	key    []byte // the cursor's current key; nil once it left prefix
	recent [][]byte
}

func newIndexWalk(c *bbolt.Cursor, prefix []byte, after *store.ListPosition, recent [][]byte) *indexWalk {
	w := &indexWalk{c: c, prefix: prefix}
	w.key, _ = startBefore(c, prefix, after)
	if !bytes.HasPrefix(w.key, prefix) {
		w.key = nil
	}
	if after != nil {
		bound := append(bytes.Clone(prefix), timeIndexKey(*after)...)
		for len(recent) > 0 && bytes.Compare(recent[0], bound) >= 0 {
			recent = recent[1:]
		}
	}
	w.recent = recent
	return w
}

// next is the next key (nil at the end) and whether only the journal named it.
func (w *indexWalk) next() (key []byte, fromJournal bool) {
	var r []byte
	if len(w.recent) > 0 {
		r = w.recent[0]
	}
	switch cmp := bytes.Compare(w.key, r); {
	case w.key == nil && r == nil:
		return nil, false
	case r == nil || (w.key != nil && cmp > 0):
		key = w.key
	case w.key == nil || cmp < 0:
		w.recent = w.recent[1:]
		return r, true
	default: // in both (folded while the journal was read)
		key = w.key
		w.recent = w.recent[1:]
	}
	if k, _ := w.c.Prev(); k != nil && bytes.HasPrefix(k, w.prefix) {
		w.key = k
	} else {
		w.key = nil
	}
	return key, false
}

// startBefore places c on the newest key under prefix that comes before after (the newest key
// under prefix when after is nil) and returns it; the key may lie outside prefix, which ends
// the walk. A position whose execution was deleted since still works: the walk resumes at the
// next older one.
func startBefore(c *bbolt.Cursor, prefix []byte, after *store.ListPosition) ([]byte, []byte) {
	var bound []byte
	if after != nil {
		bound = append(bytes.Clone(prefix), timeIndexKey(*after)...)
	} else {
		bound = append(bytes.Clone(prefix), bytes.Repeat([]byte{0xff}, 9)...) // after every key under prefix
	}
	if k, _ := c.Seek(bound); k == nil {
		return c.Last()
	}
	return c.Prev() // Seek found the first key ≥ bound; the one before it is < bound
}

// recordInTenant: a listing shows only the caller's tenant's executions ("" is the anonymous
// tenant, which owns what was created while tenancy was off).
func recordInTenant(rec store.Execution, tenant string) bool {
	return rec.Tenant == tenant
}
