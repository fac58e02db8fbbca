package backend

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The outbox in bbolt (see outbox.go). Keys are execution id + uint64 BE sequence + target id:
// one execution's rows sort by sequence, and retention deletes them by prefix. Values are a
// 16-byte header (next attempt and creation time, Unix nanoseconds, big-endian) and the
// notification's JSON: scanning for due lane heads reads the headers only.
// Both are in allBuckets (store_bolt.go), created when the store opens.
var (
	bucketOutbox       = []byte("webhookOutbox") // pending notifications
	bucketOutboxFailed = []byte("webhookFailed") // notifications recorded as failed, kept for inspection until retention
)

const outboxHeaderLen = 16

// setOutboxPlanner makes every later commit write outbox rows for the events p wants. Called by
// Open before anything is committed.
func (s *boltStore) setOutboxPlanner(p outboxPlanner) {
	s.mu.Lock()
	s.outbox = p
	s.mu.Unlock()
}

func outboxKey(n *notification) []byte {
	key := make([]byte, 0, len(n.ExecutionID)+8+targetIDLen)
	key = append(key, n.ExecutionID...)
	key = binary.BigEndian.AppendUint64(key, uint64(n.Sequence))
	return append(key, n.Target[:]...)
}

// laneOfKey is notification.lane computed from a key.
func laneOfKey(k []byte) string {
	id := k[:len(k)-8-targetIDLen]
	return string(id) + string(k[len(k)-targetIDLen:])
}

func encodeNotification(n *notification) ([]byte, error) {
	raw, err := json.Marshal(n)
	if err != nil {
		return nil, err
	}
	v := make([]byte, outboxHeaderLen, outboxHeaderLen+len(raw))
	binary.BigEndian.PutUint64(v, uint64(n.NextAttempt.UnixNano()))
	binary.BigEndian.PutUint64(v[8:], uint64(n.CreatedAt.UnixNano()))
	return append(v, raw...), nil
}

func decodeNotification(v []byte) (notification, error) {
	var n notification
	if len(v) < outboxHeaderLen {
		return n, fmt.Errorf("outbox row of %d bytes", len(v))
	}
	err := json.Unmarshal(v[outboxHeaderLen:], &n)
	return n, err
}

// applyOutbox writes the rows for b's events (planner p; nil: no subscriptions) and applies
// the sender's results. It runs in the transaction that writes b, after its executions and
// events, so the snapshot read here is the execution as this commit leaves it. Reports whether
// it wrote a new row.
func applyOutbox(tx *bolt.Tx, b *storeBatch, p outboxPlanner, at time.Time) (bool, error) {
	pending := tx.Bucket(bucketOutbox)
	wrote := false
	if p != nil {
		for _, e := range b.events {
			if !p.wants(e.event.Type) {
				continue
			}
			rec, err := snapshotOf(tx, b, e.executionID)
			if err != nil {
				return false, err
			}
			rows, err := p.notifications(e.executionID, e.event, rec.Execution, at)
			if err != nil {
				return false, err
			}
			for i := range rows {
				if err := putNotification(pending, &rows[i]); err != nil {
					return false, err
				}
				wrote = true
			}
		}
	}
	for i := range b.outboxResults {
		r := &b.outboxResults[i]
		key := outboxKey(&r.n)
		if pending.Get(key) == nil {
			continue // deleted by retention while it was being sent
		}
		switch r.outcome {
		case outboxRetry:
			if err := putNotification(pending, &r.n); err != nil {
				return false, err
			}
		case outboxDelivered, outboxFailed:
			if err := pending.Delete(key); err != nil {
				return false, err
			}
			if r.outcome == outboxFailed {
				if err := putNotification(tx.Bucket(bucketOutboxFailed), &r.n); err != nil {
					return false, err
				}
			}
		}
	}
	return wrote, nil
}

// snapshotOf is the execution as the transaction leaves it: the batch's own record when it has
// one (a state change: the terminal events, action.required), else the stored one.
func snapshotOf(tx *bolt.Tx, b *storeBatch, executionID string) (executionRecord, error) {
	for i := len(b.executions) - 1; i >= 0; i-- {
		if b.executions[i].Execution.ID == executionID {
			return b.executions[i], nil
		}
	}
	var rec executionRecord
	raw := tx.Bucket(bucketExecutions).Get([]byte(executionID))
	if raw == nil {
		return rec, fmt.Errorf("webhook snapshot of %s: no execution record", executionID)
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		return rec, fmt.Errorf("webhook snapshot of %s: %w", executionID, err)
	}
	return rec, nil
}

func putNotification(b *bolt.Bucket, n *notification) error {
	v, err := encodeNotification(n)
	if err != nil {
		return err
	}
	if err := b.Put(outboxKey(n), v); err != nil {
		return fmt.Errorf("put notification %s:%d: %w", n.ExecutionID, n.Sequence, err)
	}
	return nil
}

// deleteOutbox removes an execution's notifications, pending and failed (retention).
func deleteOutbox(tx *bolt.Tx, executionID string) error {
	for _, name := range [][]byte{bucketOutbox, bucketOutboxFailed} {
		if err := deletePrefix(tx.Bucket(name), []byte(executionID)); err != nil {
			return err
		}
	}
	return nil
}

func (s *boltStore) OutboxHeads(now time.Time, busy func(lane string) bool, limit int) (due []notification, nextDue, oldest time.Time, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		seen := map[string]bool{}
		c := tx.Bucket(bucketOutbox).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if len(k) <= 8+targetIDLen || len(v) < outboxHeaderLen {
				continue
			}
			lane := laneOfKey(k)
			if seen[lane] {
				continue // not the head of its lane
			}
			seen[lane] = true
			next := time.Unix(0, int64(binary.BigEndian.Uint64(v)))
			created := time.Unix(0, int64(binary.BigEndian.Uint64(v[8:])))
			if oldest.IsZero() || created.Before(oldest) {
				oldest = created
			}
			if busy(lane) {
				continue
			}
			if next.After(now) {
				if nextDue.IsZero() || next.Before(nextDue) {
					nextDue = next
				}
				continue
			}
			if len(due) >= limit {
				continue
			}
			n, err := decodeNotification(v) // decoded inside the transaction: v is only valid here
			if err != nil {
				return fmt.Errorf("outbox row %x: %w", k, err)
			}
			due = append(due, n)
		}
		return nil
	})
	return due, nextDue, oldest, err
}

func (s *boltStore) FailedNotifications(executionID string) ([]notification, error) {
	var out []notification
	prefix := []byte(executionID)
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketOutboxFailed).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			n, err := decodeNotification(v)
			if err != nil {
				return err
			}
			out = append(out, n)
		}
		return nil
	})
	return out, err
}

func (s *boltStore) PendingNotifications() (int, error) {
	var n int
	err := s.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketOutbox).Stats().KeyN
		return nil
	})
	return n, err
}
