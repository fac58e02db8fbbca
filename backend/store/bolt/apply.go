package bolt

import (
	"bytes"
	"encoding/json"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend/store"
)

// What one batch writes, inside the group's transaction: records, events, the index journal's
// entries, deletions.

// packAppends lets the buckets keyed by execution id fill their pages before splitting them.
// Execution ids are time-ordered (newExecutionID), so their keys arrive at the right edge of
// the tree, where bbolt's default split at half a page would leave every page half empty.
func packAppends(tx *bbolt.Tx) {
	for _, name := range [][]byte{bucketExecutions, bucketEvents, bucketArtifacts, bucketExecutionsByTime, bucketIndexJournal} {
		tx.Bucket(name).FillPercent = 0.9
	}
}

// latestRecords maps each execution id written by a group of batches to its last version in
// the group; nil writes every version.
type latestRecords map[string]*store.Execution

// latestExecutionRecords finds the last version of each execution record in group. An
// execution's record is rewritten at each change of state (queued, running, succeeded), and a
// short execution's changes often share one commit: only the last version is then written, with
// its index entries, as the transaction's result is the same (a put replaces, and a deletion in
// between removes what the later put writes anew). That saves bbolt puts, page touches and JSON
// encodings per execution. Nil when the group writes no execution more than once.
func latestExecutionRecords(group []*store.Request) latestRecords {
	var latest latestRecords
	seen := 0
	for _, req := range group {
		if len(req.Batch.Turns) > 0 || len(req.Batch.Admissions) > 0 || len(req.Batch.Erasures) > 0 || len(req.Batch.Seals) > 0 {
			// A turn reads its conversation's states, an admission its tenant's, an erasure
			// its conversation's, as earlier batches of the group left them (turns.go,
			// admission.go, erasure.go), and a write after a seal whether its execution is
			// new (seal.go): every version is written as it comes.
			return nil
		}
		for i := range req.Batch.Executions {
			rec := &req.Batch.Executions[i]
			if latest == nil {
				latest = make(latestRecords)
			}
			latest[rec.Execution.ID] = rec
			seen++
		}
	}
	if len(latest) == seen {
		return nil // nothing is superseded
	}
	return latest
}

// superseded reports whether a later version of rec is written by the same transaction.
func (l latestRecords) superseded(rec *store.Execution) bool {
	return l != nil && l[rec.Execution.ID] != rec
}

func applyBatch(tx *bbolt.Tx, b *store.Batch, latest latestRecords, keys *keyArena, jt *journalTx, ut *unfinishedTx) error {
	if len(b.Turns) > 0 {
		if err := applyTurns(tx, b, jt); err != nil {
			return err
		}
	}
	if len(b.Admissions) > 0 {
		if err := applyAdmissions(tx, b, ut); err != nil {
			return err
		}
	}
	for _, c := range b.Conversations {
		if err := putJSON(tx.Bucket(bucketConversations), []byte(c.ID), c); err != nil {
			return fmt.Errorf("put conversation %s: %w", c.ID, err)
		}
	}
	for i := range b.Executions {
		rec := &b.Executions[i]
		ut.record(rec)
		if latest.superseded(rec) {
			continue
		}
		if err := putJSON(tx.Bucket(bucketExecutions), []byte(rec.Execution.ID), rec); err != nil {
			return fmt.Errorf("put execution %s: %w", rec.Execution.ID, err)
		}
		if err := indexExecution(tx, *rec, keys, jt); err != nil {
			return fmt.Errorf("index execution %s: %w", rec.Execution.ID, err)
		}
	}
	events := tx.Bucket(bucketEvents)
	for _, e := range b.Events {
		if len(e.Event.Type) == 0 || len(e.Event.Type) > 255 {
			return fmt.Errorf("event %s:%d has no type", e.ExecutionID, e.Event.Sequence)
		}
		value := appendEventValue(keys.carve(eventValueLen(e.Event)), e.Event)
		if err := events.Put(keys.numbered(e.ExecutionID, uint64(e.Event.Sequence)), value); err != nil {
			return fmt.Errorf("put event %s:%d: %w", e.ExecutionID, e.Event.Sequence, err)
		}
	}
	for _, a := range b.Artifacts {
		key := numberedKey(a.Artifact.ExecutionID, uint64(a.Index))
		if err := putJSON(tx.Bucket(bucketArtifacts), key, a.Artifact); err != nil {
			return fmt.Errorf("put artifact %s: %w", a.Artifact.ID, err)
		}
	}
	for _, a := range b.Actions {
		if err := indexAction(tx, a); err != nil { // approvals.go
			return fmt.Errorf("index action %s: %w", a.Request.ID, err)
		}
		if err := putJSON(tx.Bucket(bucketActions), []byte(a.Request.ID), a); err != nil {
			return fmt.Errorf("put action %s: %w", a.Request.ID, err)
		}
	}
	if err := putRules(tx, b.Rules); err != nil { // approvals.go
		return err
	}
	for _, r := range b.Idempotency {
		key := idempotencyKey(r.Tenant, r.ConversationID, r.Key)
		if jt.idempotencyTaken(key) {
			// The key is taken (within this transaction too): the whole transaction is undone,
			// and the Committer retries its other batches alone.
			return fmt.Errorf("idempotency key %q of conversation %s: %w", r.Key, r.ConversationID, store.ErrConflict)
		}
		if err := jt.addIdempotency(key, r); err != nil {
			return fmt.Errorf("put idempotency record: %w", err)
		}
	}
	for _, c := range b.Checkpoints {
		if err := tx.Bucket(bucketCheckpoints).Put([]byte(c.ExecutionID), c.Data); err != nil {
			return fmt.Errorf("put checkpoint of %s: %w", c.ExecutionID, err)
		}
	}
	for _, st := range b.ProviderState {
		if err := tx.Bucket(bucketProviderState).Put([]byte(st.Key), st.Value); err != nil {
			return fmt.Errorf("put provider state: %w", err)
		}
	}
	for _, key := range b.ProviderStateDeletions {
		if err := tx.Bucket(bucketProviderState).Delete([]byte(key)); err != nil {
			return fmt.Errorf("delete provider state: %w", err)
		}
	}
	if err := putUsage(tx, b.Usage); err != nil {
		return err
	}
	if len(b.Deletions) > 0 && jt.pending() > 0 {
		// Deletions find every index entry in its bucket (retention: rare, and in bulk).
		if err := jt.fold(); err != nil {
			return fmt.Errorf("fold the index journal: %w", err)
		}
	}
	for _, rec := range b.Deletions {
		ut.remove(rec.Execution.ID)
		if err := deleteExecution(tx, rec); err != nil {
			return fmt.Errorf("delete execution %s: %w", rec.Execution.ID, err)
		}
	}
	return nil
}

func deleteExecution(tx *bbolt.Tx, rec store.Execution) error {
	id := rec.Execution.ID
	for _, name := range [][]byte{bucketEvents, bucketArtifacts} {
		if err := deletePrefix(tx.Bucket(name), []byte(id)); err != nil {
			return err
		}
	}
	if err := tx.Bucket(bucketCheckpoints).Delete([]byte(id)); err != nil {
		return err
	}
	if err := deleteOutbox(tx, id); err != nil {
		return err
	}
	actions := tx.Bucket(bucketActions)
	for _, actionID := range rec.ActionIDs {
		if err := unindexActionID(tx, actionID); err != nil {
			return err
		}
		if err := actions.Delete([]byte(actionID)); err != nil {
			return err
		}
	}
	if rec.IdempotencyKey != nil {
		key := idempotencyKey(rec.Tenant, rec.Execution.ConversationID, *rec.IdempotencyKey)
		idem := tx.Bucket(bucketIdempotency)
		// Only if it still points here: never delete someone else's binding.
		var r store.Idempotency
		if raw := idem.Get(key); raw != nil && json.Unmarshal(raw, &r) == nil && r.ExecutionID == id {
			if err := idem.Delete(key); err != nil {
				return err
			}
		}
	}
	if err := unindexExecution(tx, rec); err != nil {
		return err
	}
	return tx.Bucket(bucketExecutions).Delete([]byte(id))
}

func deletePrefix(b *bbolt.Bucket, prefix []byte) error {
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

func putJSON(b *bbolt.Bucket, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(key, raw)
}
