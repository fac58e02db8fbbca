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

// ConversationActivity counts the conversation's entries of executions_by_conversation (with
// the journal's, as ListExecutions reads them) and decodes only the newest execution.
func (s *Store) ConversationActivity(tenant, conversationID string) (store.ConversationActivity, error) {
	var out store.ConversationActivity
	recent := s.journal.conversationKeys(conversationID) // before the View: see ListExecutions
	err := s.db.View(func(tx *bbolt.Tx) error {
		prefix := conversationIndexPrefix(conversationID)
		records := tx.Bucket(bucketExecutions)
		walk := newIndexWalk(tx.Bucket(bucketExecutionsByConversation).Cursor(), prefix, nil, recent)
		for k, fromJournal := walk.next(); k != nil; k, fromJournal = walk.next() {
			id := k[len(prefix)+8:]
			if fromJournal && records.Get(id) == nil {
				continue // deleted since the journal was read
			}
			if out.Latest == nil {
				raw := records.Get(id)
				if raw == nil {
					return fmt.Errorf("index names execution %s, which has no record", id)
				}
				var rec store.Execution
				if err := json.Unmarshal(raw, &rec); err != nil {
					return fmt.Errorf("stored execution %q: %w: %w", id, store.ErrUndecodable, err)
				}
				if rec.Tenant != tenant {
					return nil // a conversation is its tenant's alone: another's has none here
				}
				out.Latest = &rec
			}
			out.Executions++
		}
		return nil
	})
	return out, err
}
