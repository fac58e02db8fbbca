package bolt

import (
	"encoding/json"
	"fmt"
	"sort"

	bbolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend/store"
)

// Sealing a conversation ahead of its erasure (store.Batch.Seals, backend/store/seal.go). The
// file's single writer makes it exact: a start committed before the seal is in the executions
// bucket when the delete lists what to cancel, one after it finds the seal.
//
// bucketSeals is made by the first seal, as bucketTombstones is by the first erasure: a file
// that never sealed anything keeps its layout, and an older release opens one that has it
// (it ignores the bucket: it would not refuse starts, and its deletes are as before).
var bucketSeals = []byte("conversation_seals") // conversation id → store.ConversationErasure JSON

// applySeals seals b's conversations. Only an existing conversation of the seal's tenant can
// be sealed; one sealed already keeps its first seal (a retried delete continues).
func applySeals(tx *bbolt.Tx, b *store.Batch) error {
	for _, e := range b.Seals {
		id := []byte(e.ConversationID)
		raw := tx.Bucket(bucketConversations).Get(id)
		if raw == nil {
			return fmt.Errorf("seal conversation %s: %w", e.ConversationID, store.ErrConversationGone)
		}
		var conv store.Conversation
		if err := json.Unmarshal(raw, &conv); err != nil {
			return fmt.Errorf("stored conversation: %w: %w", store.ErrUndecodable, err)
		}
		if conv.Tenant != e.Tenant {
			return fmt.Errorf("seal conversation %s: %w", e.ConversationID, store.ErrConversationGone)
		}
		seals, err := tx.CreateBucketIfNotExists(bucketSeals)
		if err != nil {
			return err
		}
		if seals.Get(id) != nil {
			continue
		}
		e.At = e.At.UTC()
		if err := putJSON(seals, id, e); err != nil {
			return err
		}
	}
	return nil
}

// checkNotSealed fails b when it starts an execution in a sealed conversation (writes one the
// file does not hold yet) or puts a sealed conversation's record. Updates of the executions
// it holds go on: they must be able to end. Free when nothing was ever sealed.
func checkNotSealed(tx *bbolt.Tx, b *store.Batch) error {
	seals := tx.Bucket(bucketSeals)
	if seals == nil {
		return nil
	}
	isSealed := func(id string) error {
		if id != "" && seals.Get([]byte(id)) != nil {
			return fmt.Errorf("conversation %s is being deleted: %w", id, store.ErrConversationSealed)
		}
		return nil
	}
	for _, c := range b.Conversations {
		if err := isSealed(c.ID); err != nil {
			return err
		}
	}
	execs := tx.Bucket(bucketExecutions)
	for i := range b.Executions {
		x := &b.Executions[i].Execution
		if err := isSealed(x.ConversationID); err != nil && execs.Get([]byte(x.ID)) == nil {
			return err
		}
	}
	return nil
}

// removeSeal drops conversation id's seal, if any (its erasure).
func removeSeal(tx *bbolt.Tx, id []byte) error {
	if seals := tx.Bucket(bucketSeals); seals != nil {
		return seals.Delete(id)
	}
	return nil
}

// Sealed lists the sealed conversations, oldest seal first (store.Sealer).
func (s *Store) Sealed() ([]store.ConversationErasure, error) {
	var out []store.ConversationErasure
	err := s.db.View(func(tx *bbolt.Tx) error {
		seals := tx.Bucket(bucketSeals)
		if seals == nil {
			return nil
		}
		return seals.ForEach(func(k, v []byte) error {
			var e store.ConversationErasure
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("stored seal %q: %w: %w", k, store.ErrUndecodable, err)
			}
			out = append(out, e)
			return nil
		})
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out, err
}

var _ store.Sealer = (*Store)(nil)
