package postgres

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
)

// Approvals (store.ActionRecords): the inbox and the deadlines are read through columns the
// database derives from each action's record, and rules are rows of their own (migration 7).

// timestampLayout is the runtime's timestamp text, which the derived columns hold.
const timestampLayout = "2006-01-02T15:04:05.000Z"

// queueRules writes a batch's rules. They refer to nothing else in the group, so their
// statement needs no place among the others.
func (w *groupWriter) queueRules(rules []store.Rule) {
	if len(rules) == 0 {
		return
	}
	n := len(rules)
	ids, tenants, convs, created, records := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	for _, r := range rules {
		conv := ""
		if r.ConversationID != nil {
			conv = *r.ConversationID
		}
		ids, tenants, convs = append(ids, r.ID), append(tenants, r.Tenant), append(convs, conv)
		created, records = append(created, r.CreatedAt), append(records, w.encode(r))
	}
	w.stmts.Queue(`INSERT INTO action_rules (id, tenant, conversation_id, created_at, record)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::json[])
		ON CONFLICT (id) DO UPDATE SET record = EXCLUDED.record`, ids, tenants, convs, created, records)
}

func (s *Store) PendingActions(q store.ActionQuery) (_ []store.Action, _ *store.ListPosition, err error) {
	defer func() { err = readError(err) }()
	ctx, cancel := s.opCtx()
	defer cancel()
	sql := `SELECT a.id, a.record, e.tenant, e.conversation_id, e.record->'execution'->>'providerId'
		FROM actions a JOIN executions e ON e.id = a.record->'request'->>'executionId'
		WHERE a.pending_since IS NOT NULL AND e.tenant = $1`
	args := []any{q.Tenant}
	if q.ConversationID != "" {
		args = append(args, q.ConversationID)
		sql += fmt.Sprintf(` AND e.conversation_id = $%d`, len(args))
	}
	if q.ProviderID != "" {
		args = append(args, q.ProviderID)
		sql += fmt.Sprintf(` AND e.record->'execution'->>'providerId' = $%d`, len(args))
	}
	if q.After != nil {
		args = append(args, time.UnixMilli(int64(q.After.CreatedMs)).UTC().Format(timestampLayout), q.After.ID)
		sql += fmt.Sprintf(` AND (a.pending_since, a.id) > ($%d, $%d)`, len(args)-1, len(args))
	}
	args = append(args, q.Limit+1) // one more tells whether another page follows
	sql += fmt.Sprintf(` ORDER BY a.pending_since, a.id LIMIT $%d`, len(args))
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var (
		out  []store.Action
		read int
		last store.ListPosition
	)
	for rows.Next() {
		var id, tenant, conv string
		var provider *string
		var raw []byte
		if err := rows.Scan(&id, &raw, &tenant, &conv, &provider); err != nil {
			return nil, nil, err
		}
		read++
		if read > q.Limit {
			break
		}
		var a store.Action
		if err := json.Unmarshal(raw, &a); err != nil {
			if q.Undecodable != nil {
				q.Undecodable(id, fmt.Errorf("%w: %w", store.ErrUndecodable, err))
			}
			continue
		}
		a.Tenant, a.ConversationID = tenant, conv
		if provider != nil {
			a.ProviderID = *provider
		}
		last = store.ActionPositionOf(a)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	if read > q.Limit {
		return out, &last, nil
	}
	return out, nil, nil
}

func (s *Store) DueActions(now time.Time, limit int) (_ []store.Action, _ time.Time, err error) {
	defer func() { err = readError(err) }()
	ctx, cancel := s.opCtx()
	defer cancel()
	cutoff := now.UTC().Format(timestampLayout)
	rows, err := s.pool.Query(ctx, `SELECT record FROM actions WHERE expires_at IS NOT NULL AND expires_at <= $1
		ORDER BY expires_at, id LIMIT $2`, cutoff, limit)
	if err != nil {
		return nil, time.Time{}, err
	}
	var due []store.Action
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			rows.Close()
			return nil, time.Time{}, err
		}
		var a store.Action
		if json.Unmarshal(raw, &a) == nil { // a damaged record is reported when it is answered
			due = append(due, a)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, time.Time{}, err
	}
	if len(due) == limit {
		return due, due[len(due)-1].ExpiresAt(), nil // more may be due: ask again at once
	}
	var text string
	found, err := s.getOne(`SELECT expires_at FROM actions WHERE expires_at IS NOT NULL AND expires_at > $1
		ORDER BY expires_at LIMIT 1`, []any{cutoff}, &text)
	if err != nil || !found {
		return due, time.Time{}, err
	}
	next, err := time.Parse(timestampLayout, text)
	if err != nil {
		return due, time.Time{}, nil // not the runtime's text: nothing to wait for
	}
	return due, next, nil
}

func (s *Store) Rule(id string) (store.Rule, bool, error) {
	var r store.Rule
	found, err := s.getRecord(`SELECT record FROM action_rules WHERE id = $1`, []any{id}, &r)
	return r, found, err
}

func (s *Store) Rules(tenant, conversationID string) (_ []store.Rule, err error) {
	defer func() { err = readError(err) }()
	ctx, cancel := s.opCtx()
	defer cancel()
	sql := `SELECT record FROM action_rules WHERE tenant = $1 ORDER BY created_at, id`
	args := []any{tenant}
	if conversationID != "" {
		sql = `SELECT record FROM action_rules WHERE tenant = $1 AND conversation_id IN ('', $2) ORDER BY created_at, id`
		args = append(args, conversationID)
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Rule
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, err
		}
		var r store.Rule
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("stored rule: %w: %w", store.ErrUndecodable, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
