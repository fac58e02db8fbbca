package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend/store"
)

// The outbox in bbolt (see store/outbox.go). Keys are execution id + uint64 BE sequence +
// target id: one execution's rows sort by sequence, and retention deletes them by prefix. Values
// are a 16-byte header (next attempt and creation time, Unix nanoseconds, big-endian) and the
// store.Notification's JSON: scanning for due lane heads reads the headers only.
const outboxHeaderLen = 16

// setOutboxPlanner makes every later commit write outbox rows for the events p wants. Called by
// Open before anything is committed.
func (s *Store) setOutboxPlanner(p store.OutboxPlanner) {
	s.mu.Lock()
	s.outbox = p
	s.mu.Unlock()
}

func outboxKey(n *store.Notification) []byte {
	key := make([]byte, 0, len(n.ExecutionID)+8+store.TargetIDLen)
	key = append(key, n.ExecutionID...)
	key = binary.BigEndian.AppendUint64(key, uint64(n.Sequence))
	return append(key, n.Target[:]...)
}

// laneOfKey is store.Notification.lane computed from a key.
func laneOfKey(k []byte) string {
	id := k[:len(k)-8-store.TargetIDLen]
	return string(id) + string(k[len(k)-store.TargetIDLen:])
}

func encodeNotification(n *store.Notification) ([]byte, error) {
	raw, err := json.Marshal(n)
	if err != nil {
		return nil, err
	}
	v := make([]byte, outboxHeaderLen, outboxHeaderLen+len(raw))
	binary.BigEndian.PutUint64(v, uint64(n.NextAttempt.UnixNano()))
	binary.BigEndian.PutUint64(v[8:], uint64(n.CreatedAt.UnixNano()))
	return append(v, raw...), nil
}

func decodeNotification(v []byte) (store.Notification, error) {
	var n store.Notification
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
func applyOutbox(tx *bbolt.Tx, b *store.Batch, p store.OutboxPlanner, at time.Time) (bool, error) {
	pending := tx.Bucket(bucketOutbox)
	wrote := false
	if p != nil {
		for _, e := range b.Events {
			if !p.Wants(e.Event.Type) {
				continue
			}
			rec, err := snapshotOf(tx, b, e.ExecutionID)
			if err != nil {
				return false, err
			}
			rows, err := p.Notifications(e.ExecutionID, e.Event, rec, at)
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
	for i := range b.OutboxResults {
		r := &b.OutboxResults[i]
		key := outboxKey(&r.Notification)
		if pending.Get(key) == nil {
			continue // deleted by retention while it was being sent
		}
		switch r.Outcome {
		case store.OutboxRetry:
			if err := putNotification(pending, &r.Notification); err != nil {
				return false, err
			}
		case store.OutboxDelivered, store.OutboxFailed:
			if err := pending.Delete(key); err != nil {
				return false, err
			}
			if r.Outcome == store.OutboxFailed {
				if err := putNotification(tx.Bucket(bucketOutboxFailed), &r.Notification); err != nil {
					return false, err
				}
			}
		}
	}
	return wrote, nil
}

// snapshotOf is the execution as the transaction leaves it: the batch's own record when it has
// one (a state change: the terminal events, action.required), else the stored one.
func snapshotOf(tx *bbolt.Tx, b *store.Batch, executionID string) (store.Execution, error) {
	for i := len(b.Executions) - 1; i >= 0; i-- {
		if b.Executions[i].Execution.ID == executionID {
			return b.Executions[i], nil
		}
	}
	var rec store.Execution
	raw := tx.Bucket(bucketExecutions).Get([]byte(executionID))
	if raw == nil {
		return rec, fmt.Errorf("webhook snapshot of %s: no execution record", executionID)
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		return rec, fmt.Errorf("webhook snapshot of %s: %w", executionID, err)
	}
	return rec, nil
}

func putNotification(b *bbolt.Bucket, n *store.Notification) error {
	v, err := encodeNotification(n)
	if err != nil {
		return err
	}
	if err := b.Put(outboxKey(n), v); err != nil {
		return fmt.Errorf("put store.Notification %s:%d: %w", n.ExecutionID, n.Sequence, err)
	}
	return nil
}

// deleteOutbox removes an execution's notifications, pending and failed (retention).
func deleteOutbox(tx *bbolt.Tx, executionID string) error {
	for _, name := range [][]byte{bucketOutbox, bucketOutboxFailed} {
		if err := deletePrefix(tx.Bucket(name), []byte(executionID)); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) OutboxHeads(now time.Time, busy func(lane string) bool, limit int) (due []store.Notification, nextDue, oldest time.Time, err error) {
	err = s.db.View(func(tx *bbolt.Tx) error {
		seen := map[string]bool{}
		c := tx.Bucket(bucketOutbox).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if len(k) <= 8+store.TargetIDLen || len(v) < outboxHeaderLen {
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

func (s *Store) FailedNotifications(executionID string) ([]store.Notification, error) {
	var out []store.Notification
	prefix := []byte(executionID)
	err := s.db.View(func(tx *bbolt.Tx) error {
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

func (s *Store) PendingNotifications() (int, error) {
	var n int
	err := s.db.View(func(tx *bbolt.Tx) error {
		n = tx.Bucket(bucketOutbox).Stats().KeyN
		return nil
	})
	return n, err
}
