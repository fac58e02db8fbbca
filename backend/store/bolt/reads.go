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

// Reads: each in its own read-only transaction, concurrent with the commit goroutine's
// writes (bbolt's MVCC); the index journal is consulted first where it holds recent entries.

// getJSON decodes the value under key into v; found is false when the key is absent. The bytes
// are decoded inside the transaction because bbolt's slices are only valid there.
func (s *Store) getJSON(bucket, key []byte, v any) (found bool, err error) {
	err = s.db.View(func(tx *bbolt.Tx) error {
		raw := tx.Bucket(bucket).Get(key)
		if raw == nil {
			return nil
		}
		found = true
		if err := json.Unmarshal(raw, v); err != nil {
			return fmt.Errorf("stored %s record %q: %w: %w", bucket, key, store.ErrUndecodable, err)
		}
		return nil
	})
	return found, err
}

func (s *Store) Conversation(id string) (store.Conversation, bool, error) {
	var c store.Conversation
	found, err := s.getJSON(bucketConversations, []byte(id), &c)
	return c, found, err
}

func (s *Store) Execution(id string) (store.Execution, bool, error) {
	var rec store.Execution
	found, err := s.getJSON(bucketExecutions, []byte(id), &rec)
	return rec, found, err
}

func (s *Store) Action(id string) (store.Action, bool, error) {
	var rec store.Action
	found, err := s.getJSON(bucketActions, []byte(id), &rec)
	return rec, found, err
}

func (s *Store) Idempotency(tenant, conversationID, key string) (store.Idempotency, bool, error) {
	k := idempotencyKey(tenant, conversationID, key)
	// The journal first: what it no longer holds was folded before the View below begins.
	if rec, ok := s.journal.idempotency(k); ok {
		return rec, true, nil
	}
	var rec store.Idempotency
	found, err := s.getJSON(bucketIdempotency, k, &rec)
	return rec, found, err
}

func (s *Store) Checkpoint(executionID string) ([]byte, bool, error) {
	return s.getBytes(bucketCheckpoints, []byte(executionID))
}

func (s *Store) ProviderState(key string) ([]byte, bool, error) {
	return s.getBytes(bucketProviderState, []byte(key))
}

// getBytes copies the value under key out of the transaction; found is false when absent.
func (s *Store) getBytes(bucket, key []byte) (value []byte, found bool, err error) {
	err = s.db.View(func(tx *bbolt.Tx) error {
		if raw := tx.Bucket(bucket).Get(key); raw != nil {
			value, found = append([]byte{}, raw...), true
		}
		return nil
	})
	return value, found, err
}

func (s *Store) Events(executionID string, after int64, limit int) ([]store.Event, error) {
	var out []store.Event
	prefix := []byte(executionID)
	err := s.db.View(func(tx *bbolt.Tx) error {
		// bbolt's values are only valid inside the transaction: copy the JSON into a few
		// large chunks instead of one allocation per event.
		var arena []byte
		c := tx.Bucket(bucketEvents).Cursor()
		for k, v := c.Seek(numberedKey(executionID, uint64(after)+1)); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(k) != len(prefix)+8 {
				continue
			}
			seq := int64(binary.BigEndian.Uint64(k[len(prefix):]))
			e, err := decodeEventValue(seq, v)
			if err != nil {
				return fmt.Errorf("event %s:%d: %w", executionID, seq, err)
			}
			if cap(arena)-len(arena) < len(e.JSON) {
				arena = make([]byte, 0, max(64<<10, len(e.JSON)))
			}
			start := len(arena)
			arena = append(arena, e.JSON...)
			e.JSON = arena[start:len(arena):len(arena)]
			out = append(out, e)
			if limit > 0 && len(out) >= limit {
				break
			}
		}
		return nil
	})
	return out, err
}

func (s *Store) LastSequence(executionID string) (int64, error) {
	var last int64
	prefix := []byte(executionID)
	err := s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketEvents).Cursor()
		// Seek just past this execution's key range, then step back once.
		k, _ := c.Seek(numberedKey(executionID, ^uint64(0)))
		if k == nil {
			k, _ = c.Last()
		} else if !bytes.Equal(k, numberedKey(executionID, ^uint64(0))) {
			k, _ = c.Prev()
		}
		if k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+8 {
			last = int64(binary.BigEndian.Uint64(k[len(prefix):]))
		}
		return nil
	})
	return last, err
}

func (s *Store) Artifacts(executionID string) ([]api.Artifact, error) {
	out := []api.Artifact{}
	prefix := []byte(executionID)
	err := s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketArtifacts).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var a api.Artifact
			if err := json.Unmarshal(v, &a); err != nil {
				return fmt.Errorf("artifact of %s: %w", executionID, err)
			}
			out = append(out, a)
		}
		return nil
	})
	return out, err
}

func (s *Store) ForEachExecution(visit func(store.Execution) bool, undecodable func(id string, err error)) error {
	return s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketExecutions).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			var rec store.Execution
			if err := json.Unmarshal(v, &rec); err != nil {
				undecodable(string(k), err)
				continue
			}
			if !visit(rec) {
				return nil
			}
		}
		return nil
	})
}
