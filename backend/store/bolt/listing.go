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

// The listing's two index buckets. Keys are in creation order — big-endian milliseconds, then
// the execution id — and a listing walks them backwards, newest first. (Forward keys rather
// than reverse-time ones: new executions then land at the right edge of the B+tree, where
// bbolt appends cheaply, like the executions bucket itself.) The value is the execution's
// state, so a state filter reads only the index and decodes just the records it returns.
//
// Both are written in the same transaction as the execution record (applyBatch) and removed
// with it (deleteExecution), so they never disagree with the records. A store created before
// the listing existed has neither bucket; Open builds them from the records.
var (
	bucketExecutionsByTime         = []byte("executions_by_time")         // ms + execution id → state
	bucketExecutionsByConversation = []byte("executions_by_conversation") // conversation id + 0x00 + ms + execution id → state
)

// executionLister is the store's part of the listing.
type executionLister interface {
	// ListExecutions returns at most q.Limit records, newest first, after q.After, and the
	// position to continue from when more may follow (nil on the last page).
	ListExecutions(q store.ListQuery) ([]store.Execution, *store.ListPosition, error)
}

func timeIndexKey(p store.ListPosition) []byte {
	key := make([]byte, 0, 8+len(p.ID))
	key = binary.BigEndian.AppendUint64(key, p.CreatedMs)
	return append(key, p.ID...)
}

// conversationIndexPrefix ends with 0x00, which no id contains, so one conversation's prefix
// is never the start of another's.
func conversationIndexPrefix(conversationID string) []byte {
	return append([]byte(conversationID), 0)
}

func conversationIndexKey(conversationID string, p store.ListPosition) []byte {
	return append(conversationIndexPrefix(conversationID), timeIndexKey(p)...)
}

// indexExecution writes (or rewrites, with its new state) rec's index entries.
func indexExecution(tx *bbolt.Tx, rec store.Execution) error {
	e := rec.Execution
	p, state := store.PositionOf(e), []byte(e.State)
	if err := tx.Bucket(bucketExecutionsByTime).Put(timeIndexKey(p), state); err != nil {
		return err
	}
	return tx.Bucket(bucketExecutionsByConversation).Put(conversationIndexKey(e.ConversationID, p), state)
}

// unindexExecution removes rec's index entries (retention).
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
			return indexExecution(tx, rec)
		})
	})
	return indexed, err
}

func (s *Store) ListExecutions(q store.ListQuery) ([]store.Execution, *store.ListPosition, error) {
	var (
		out  []store.Execution
		next *store.ListPosition
	)
	err := s.db.View(func(tx *bbolt.Tx) error {
		index, prefix := tx.Bucket(bucketExecutionsByTime), []byte(nil)
		if q.ConversationID != "" {
			index, prefix = tx.Bucket(bucketExecutionsByConversation), conversationIndexPrefix(q.ConversationID)
		}
		records := tx.Bucket(bucketExecutions)
		c := index.Cursor()
		for k, v := startBefore(c, prefix, q.After); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Prev() {
			if q.States != nil && !q.States[api.ExecutionState(v)] {
				continue
			}
			id := k[len(prefix)+8:]
			raw := records.Get(id)
			if raw == nil {
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
