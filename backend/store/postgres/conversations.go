package postgres

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

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
// it, in one statement.
func (s *Store) ConversationActivity(tenant, conversationID string) (_ store.ConversationActivity, err error) {
	defer func() { err = readError(err) }()
	ctx, cancel := s.opCtx()
	defer cancel()
	var (
		n   int
		raw []byte
	)
	err = s.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM executions WHERE tenant = $1 AND conversation_id = $2),
		(SELECT record::text FROM executions WHERE tenant = $1 AND conversation_id = $2
			ORDER BY created_ms DESC, id DESC LIMIT 1)`, tenant, conversationID).Scan(&n, &raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ConversationActivity{}, nil
	}
	if err != nil {
		return store.ConversationActivity{}, err
	}
	out := store.ConversationActivity{Executions: n}
	if raw != nil {
		var rec store.Execution
		if err := json.Unmarshal(raw, &rec); err != nil {
			return out, fmt.Errorf("stored execution of conversation %q: %w: %w", conversationID, store.ErrUndecodable, err)
		}
		out.Latest = &rec
	}
	return out, nil
}
