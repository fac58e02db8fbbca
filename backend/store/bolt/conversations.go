package bolt

import (
	"encoding/json"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend/store"
)

// ForEachConversation walks the conversations bucket and keeps tenant's records. There is no
// index by tenant: a walk reads every conversation of the file (docs/storage.md).
func (s *Store) ForEachConversation(tenant string, visit func(store.Conversation) bool, undecodable func(id string, err error)) error {
	return s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketConversations).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			var rec store.Conversation
			if err := json.Unmarshal(v, &rec); err != nil {
				if undecodable != nil {
					undecodable(string(k), fmt.Errorf("%w: %w", store.ErrUndecodable, err))
				}
				continue
			}
			if rec.Tenant == tenant && !visit(rec) {
				return nil
			}
		}
		return nil
	})
}

// ConversationActivity counts each conversation's entries of executions_by_conversation (with
// the journal's, as ListExecutions reads them) and decodes only its newest execution, all in
// one read transaction.
func (s *Store) ConversationActivity(tenant string, ids []string) (map[string]store.ConversationActivity, error) {
	recent := make([][][]byte, len(ids)) // before the View: see ListExecutions
	for i, id := range ids {
		recent[i] = s.journal.conversationKeys(id)
	}
	out := make(map[string]store.ConversationActivity, len(ids))
	err := s.db.View(func(tx *bbolt.Tx) error {
		records, index := tx.Bucket(bucketExecutions), tx.Bucket(bucketExecutionsByConversation)
		for i, conversationID := range ids {
			a, err := conversationActivity(records, index, conversationID, tenant, recent[i])
			if err != nil {
				return err
			}
			if a.Executions > 0 {
				out[conversationID] = a
			}
		}
		return nil
	})
	return out, err
}

func conversationActivity(records, index *bbolt.Bucket, conversationID, tenant string, recent [][]byte) (store.ConversationActivity, error) {
	var a store.ConversationActivity
	prefix := conversationIndexPrefix(conversationID)
	walk := newIndexWalk(index.Cursor(), prefix, nil, recent)
	for k, fromJournal := walk.next(); k != nil; k, fromJournal = walk.next() {
		id := k[len(prefix)+8:]
		if fromJournal && records.Get(id) == nil {
			continue // deleted since the journal was read
		}
		if a.Latest == nil {
			raw := records.Get(id)
			if raw == nil {
				return a, fmt.Errorf("index names execution %s, which has no record", id)
			}
			var rec store.Execution
			if err := json.Unmarshal(raw, &rec); err != nil {
				return a, fmt.Errorf("stored execution %q: %w: %w", id, store.ErrUndecodable, err)
			}
			if rec.Tenant != tenant {
				return store.ConversationActivity{}, nil // a conversation is its tenant's alone: another's has none here
			}
			a.Latest = &rec
		}
		a.Executions++
	}
	return a, nil
}
