package bolt

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend/store"
)

// Erasing a conversation (store.Batch.Erasures, backend/store/erasure.go), in the group's
// transaction: the file's single writer is what makes it exact against concurrent starts —
// a start committed before it is found (and refuses it while running), one after it meets
// the tombstone.
//
// bucketTombstones is made by the first erasure, not by Open, as bucketUsage is: a file that
// never erased anything keeps its layout exactly, and an older release opens one that has it
// (it ignores the bucket, and would serve the erased conversation as not found anyway: its
// records are gone).
var bucketTombstones = []byte("conversation_tombstones") // conversation id → store.Tombstone JSON

// erasedUsagePrefix begins the id an erased execution's usage row is kept under: the row stays
// (usage sums must not shrink), but nothing in it leads back to the execution or its
// conversation. Execution ids begin with "exec_", so the two never meet.
const erasedUsagePrefix = "erased_"

// checkNotErased fails b when it writes into an erased conversation: its record, an execution,
// an event, usage, an idempotency record or a rule. Free when nothing was ever erased (the
// bucket does not exist).
func checkNotErased(tx *bbolt.Tx, b *store.Batch) error {
	tombs := tx.Bucket(bucketTombstones)
	if tombs == nil {
		return nil
	}
	last := ""
	check := func(id string) error {
		if id == "" || id == last {
			return nil
		}
		last = id
		if tombs.Get([]byte(id)) != nil {
			return fmt.Errorf("conversation %s was deleted: %w", id, store.ErrConversationGone)
		}
		return nil
	}
	for _, c := range b.Conversations {
		if err := check(c.ID); err != nil {
			return err
		}
	}
	for i := range b.Executions {
		if err := check(b.Executions[i].Execution.ConversationID); err != nil {
			return err
		}
	}
	for i := range b.Events {
		if sc := b.Events[i].Scope; sc != nil {
			if err := check(sc.ConversationID); err != nil {
				return err
			}
		}
	}
	for _, u := range b.Usage {
		if err := check(u.ConversationID); err != nil {
			return err
		}
	}
	for _, r := range b.Idempotency {
		if err := check(r.ConversationID); err != nil {
			return err
		}
	}
	for _, r := range b.Rules {
		if r.ConversationID != nil {
			if err := check(*r.ConversationID); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyErasures erases b's conversations (after b's other writes) and writes what announces
// each: the tombstone, the stream log's marker (streamLog.erase notes it for write) and, when
// the planner makes them, the webhook rows. Reports whether it wrote an outbox row.
func (s *Store) applyErasures(tx *bbolt.Tx, b *store.Batch, jt *journalTx, ut *unfinishedTx, planner store.OutboxPlanner) (bool, error) {
	if jt.pending() > 0 {
		// The erasure finds the conversation's executions and idempotency records in their
		// buckets: the journal's entries go there first (as for Deletions).
		if err := jt.fold(); err != nil {
			return false, fmt.Errorf("fold the index journal: %w", err)
		}
	}
	wrote := false
	for _, e := range b.Erasures {
		t, err := eraseConversation(tx, e, ut)
		if err != nil {
			return false, fmt.Errorf("erase conversation %s: %w", e.ConversationID, err)
		}
		if err := s.log.erase(tx, t); err != nil {
			return false, fmt.Errorf("erase conversation %s from the stream log: %w", e.ConversationID, err)
		}
		if ep, ok := planner.(store.ErasurePlanner); ok {
			rows, err := ep.ErasureNotifications(t, e.At)
			if err != nil {
				return false, err
			}
			for i := range rows {
				if err := putNotification(tx.Bucket(bucketOutbox), &rows[i]); err != nil {
					return false, err
				}
				wrote = true
			}
		}
	}
	return wrote, nil
}

// eraseConversation deletes e's conversation with everything of it but its stream log entries
// (streamLog.erase) and writes its tombstone.
func eraseConversation(tx *bbolt.Tx, e store.ConversationErasure, ut *unfinishedTx) (store.Tombstone, error) {
	id := []byte(e.ConversationID)
	var conv store.Conversation
	raw := tx.Bucket(bucketConversations).Get(id)
	if raw == nil {
		return store.Tombstone{}, store.ErrConversationGone // erased before, or never created
	}
	if err := json.Unmarshal(raw, &conv); err != nil {
		return store.Tombstone{}, fmt.Errorf("stored conversation: %w: %w", store.ErrUndecodable, err)
	}
	if conv.Tenant != e.Tenant {
		return store.Tombstone{}, store.ErrConversationGone // another tenant's: not found for this one
	}
	execs, err := conversationExecutions(tx, e)
	if err != nil {
		return store.Tombstone{}, err
	}
	for _, rec := range execs {
		if !rec.Execution.State.Terminal() {
			return store.Tombstone{}, fmt.Errorf("execution %s is %s: %w", rec.Execution.ID, rec.Execution.State, store.ErrConversationBusy)
		}
	}
	for _, rec := range execs {
		ut.remove(rec.Execution.ID)
		if err := eraseUsage(tx, rec); err != nil {
			return store.Tombstone{}, err
		}
		if err := deleteExecution(tx, rec); err != nil {
			return store.Tombstone{}, fmt.Errorf("delete execution %s: %w", rec.Execution.ID, err)
		}
	}
	// Every idempotency record of the conversation, also those no remaining execution points
	// at: the key begins with the tenant and the conversation (idempotencyKey).
	if err := deletePrefix(tx.Bucket(bucketIdempotency), idempotencyKey(e.Tenant, e.ConversationID, "")); err != nil {
		return store.Tombstone{}, err
	}
	if err := deleteConversationRules(tx, e); err != nil {
		return store.Tombstone{}, err
	}
	if err := tx.Bucket(bucketConversations).Delete(id); err != nil {
		return store.Tombstone{}, err
	}
	if err := removeSeal(tx, id); err != nil { // seal.go
		return store.Tombstone{}, err
	}
	t := store.Tombstone{ConversationID: e.ConversationID, Tenant: e.Tenant, DeletedAt: e.At.UTC(), Executions: len(execs)}
	tombs, err := tx.CreateBucketIfNotExists(bucketTombstones)
	if err != nil {
		return store.Tombstone{}, err
	}
	return t, putJSON(tombs, id, t)
}

// conversationExecutions reads the records of e's conversation's executions of its tenant, by
// executions_by_conversation (the journal was folded into it).
func conversationExecutions(tx *bbolt.Tx, e store.ConversationErasure) ([]store.Execution, error) {
	prefix := conversationIndexPrefix(e.ConversationID)
	records := tx.Bucket(bucketExecutions)
	var out []store.Execution
	c := tx.Bucket(bucketExecutionsByConversation).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		execID := k[len(prefix)+8:]
		raw := records.Get(execID)
		if raw == nil {
			continue // an index entry without its record: removed with the rest below
		}
		var rec store.Execution
		if err := json.Unmarshal(raw, &rec); err != nil {
			// Not readable, so neither provably ended nor erasable: the operator's to repair
			// (docs/operations.md, "A record that cannot be decoded").
			return nil, fmt.Errorf("stored execution %q: %w: %w", execID, store.ErrUndecodable, err)
		}
		if rec.Tenant == e.Tenant {
			out = append(out, rec)
		}
	}
	return out, nil
}

// eraseUsage moves rec's usage row to an id of its own that names neither the execution nor
// the conversation, keeping what it counts, its tenant, provider and time: sums over any range
// and grouping stay what they were (the conversation grouping counts it under "").
func eraseUsage(tx *bbolt.Tx, rec store.Execution) error {
	b := tx.Bucket(bucketUsage)
	if b == nil {
		return nil
	}
	key := usageKey(store.ExecutionUsage{ExecutionID: rec.Execution.ID, Tenant: rec.Tenant, CreatedMs: int64(store.PositionOf(rec.Execution).CreatedMs)})
	raw := b.Get(key)
	if raw == nil {
		return nil
	}
	r, err := store.DecodeUsageRecord(raw, json.Unmarshal)
	if err != nil {
		return fmt.Errorf("stored usage record %q: %w: %w", key, store.ErrUndecodable, err)
	}
	if err := b.Delete(key); err != nil {
		return err
	}
	r.ExecutionID, r.ConversationID = newErasedUsageID(), ""
	return putJSON(b, usageKey(r), store.UsageRecord(r))
}

func newErasedUsageID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return erasedUsagePrefix + hex.EncodeToString(b[:])
}

// deleteConversationRules deletes the standing rules scoped to e's conversation with their
// scope index keys.
func deleteConversationRules(tx *bbolt.Tx, e store.ConversationErasure) error {
	tenantKey := tenantPrefix(nil, e.Tenant)
	prefix := tenantPrefix(bytes.Clone(tenantKey), e.ConversationID)
	rules := tx.Bucket(bucketActionRules)
	c := tx.Bucket(bucketActionRulesByScope).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if id, ok := ruleIDOf(k, len(tenantKey)); ok {
			if err := rules.Delete(bytes.Clone(id)); err != nil {
				return err
			}
		}
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// Tombstone reads an erased conversation's tombstone (store.ErasureReader).
func (s *Store) Tombstone(conversationID string) (store.Tombstone, bool, error) {
	var t store.Tombstone
	found := false
	err := s.db.View(func(tx *bbolt.Tx) error {
		var err error
		t, found, err = tombstoneIn(tx, conversationID)
		return err
	})
	return t, found, err
}

func tombstoneIn(tx *bbolt.Tx, conversationID string) (store.Tombstone, bool, error) {
	var t store.Tombstone
	b := tx.Bucket(bucketTombstones)
	if b == nil {
		return t, false, nil
	}
	raw := b.Get([]byte(conversationID))
	if raw == nil {
		return t, false, nil
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return t, false, fmt.Errorf("stored tombstone %q: %w: %w", conversationID, store.ErrUndecodable, err)
	}
	return t, true, nil
}

var _ store.ErasureReader = (*Store)(nil)

// erasedAt is when an entry of the log without a tombstone to read was erased (never written
// so; the block's commit time stands in).
func erasedAt(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
