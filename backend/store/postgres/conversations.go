package postgres

import (
	"encoding/json"
	"fmt"

	"github.com/harness-edge/harness-edge/backend/store"
)

// ForEachConversation reads tenant's conversations through conversations_by_tenant
// (migration 00011).
func (s *Store) ForEachConversation(tenant string, visit func(store.Conversation) bool, undecodable func(id string, err error)) (err error) {
	defer func() { err = readError(err) }()
	ctx, cancel := s.opCtx()
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT id, record FROM conversations WHERE tenant = $1 ORDER BY id`, tenant)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id  string
			raw []byte
		)
		if err := rows.Scan(&id, &raw); err != nil {
			return err
		}
		var rec store.Conversation
		if err := json.Unmarshal(raw, &rec); err != nil {
			if undecodable != nil {
				undecodable(id, fmt.Errorf("%w: %w", store.ErrUndecodable, err))
			}
			continue
		}
		if !visit(rec) {
			return nil
		}
	}
	return rows.Err()
}

// ConversationActivity counts on executions_by_conversation_time and reads the newest row of
// it for every conversation of ids, in one statement.
func (s *Store) ConversationActivity(tenant string, ids []string) (_ map[string]store.ConversationActivity, err error) {
	defer func() { err = readError(err) }()
	ctx, cancel := s.opCtx()
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT c.id, a.n, l.record::text
		FROM unnest($2::text[]) AS c(id)
		CROSS JOIN LATERAL (SELECT count(*) AS n FROM executions e
			WHERE e.tenant = $1 AND e.conversation_id = c.id COLLATE "C") a
		LEFT JOIN LATERAL (SELECT e.record FROM executions e
			WHERE e.tenant = $1 AND e.conversation_id = c.id COLLATE "C"
			ORDER BY e.created_ms DESC, e.id DESC LIMIT 1) l ON true
		WHERE a.n > 0`, tenant, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[string]store.ConversationActivity, len(ids))
	for rows.Next() {
		var (
			id  string
			n   int
			raw []byte
		)
		if err := rows.Scan(&id, &n, &raw); err != nil {
			return nil, err
		}
		a := store.ConversationActivity{Executions: n}
		if raw != nil {
			var rec store.Execution
			if err := json.Unmarshal(raw, &rec); err != nil {
				return nil, fmt.Errorf("stored execution of conversation %q: %w: %w", id, store.ErrUndecodable, err)
			}
			a.Latest = &rec
		}
		out[id] = a
	}
	return out, rows.Err()
}
