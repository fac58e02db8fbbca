package postgres

import (
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Reads see committed rows only (READ COMMITTED): a batch is visible whole or not at all.

func (s *Store) getRecord(sql string, arg []any, v any) (bool, error) {
	var raw []byte
	found, err := s.getOne(sql, arg, &raw)
	if !found || err != nil {
		return found, err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("stored record %v: %w: %w", arg[0], store.ErrUndecodable, err)
	}
	return true, nil
}

// executionRows decodes rows of (id, record) and hands each record to keep, in row order, then
// closes rows: the one loop of the reads of several execution records (a node's unfinished
// ones, a webhook's snapshots, a batch's turns). what names the read in the error of a record
// that cannot be decoded, which names the record and matches store.ErrUndecodable, as every
// read's does.
func executionRows(rows pgx.Rows, what string, keep func(id string, rec store.Execution)) error {
	defer rows.Close()
	for rows.Next() {
		var id string
		var raw []byte
		if err := rows.Scan(&id, &raw); err != nil {
			return err
		}
		var rec store.Execution
		if err := json.Unmarshal(raw, &rec); err != nil {
			return fmt.Errorf("%s %s: %w: %w", what, id, store.ErrUndecodable, err)
		}
		keep(id, rec)
	}
	return rows.Err()
}

func (s *Store) Conversation(id string) (store.Conversation, bool, error) {
	var rec store.Conversation
	found, err := s.getRecord(`SELECT record FROM conversations WHERE id = $1`, []any{id}, &rec)
	return rec, found, err
}

func (s *Store) Execution(id string) (store.Execution, bool, error) {
	var rec store.Execution
	found, err := s.getRecord(`SELECT record FROM executions WHERE id = $1`, []any{id}, &rec)
	return rec, found, err
}

func (s *Store) Action(id string) (store.Action, bool, error) {
	var rec store.Action
	found, err := s.getRecord(`SELECT record FROM actions WHERE id = $1`, []any{id}, &rec)
	return rec, found, err
}

func (s *Store) Idempotency(tenant, conversationID, key string) (store.Idempotency, bool, error) {
	var rec store.Idempotency
	found, err := s.getRecord(`SELECT record FROM idempotency WHERE tenant = $1 AND conversation_id = $2 AND key = $3`,
		[]any{tenant, conversationID, []byte(key)}, &rec)
	return rec, found, err
}

func (s *Store) Checkpoint(executionID string) ([]byte, bool, error) {
	var data []byte
	found, err := s.getOne(`SELECT data FROM checkpoints WHERE execution_id = $1`, []any{executionID}, &data)
	return data, found, err
}

func (s *Store) ProviderState(key string) ([]byte, bool, error) {
	var value []byte
	found, err := s.getOne(`SELECT value FROM provider_state WHERE key = $1`, []any{[]byte(key)}, &value)
	return value, found, err
}

func (s *Store) Events(executionID string, after int64, limit int) (_ []store.Event, err error) {
	defer func() { err = readError(err) }()
	ctx, cancel := s.opCtx()
	defer cancel()
	sql := `SELECT sequence, type, data, checksum FROM events WHERE execution_id = $1 AND sequence > $2 ORDER BY sequence`
	args := []any{executionID, after}
	if limit > 0 {
		sql += ` LIMIT $3`
		args = append(args, limit)
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Event
	for rows.Next() {
		var seq int64
		var typ, raw []byte
		var sum int32
		if err := rows.Scan(&seq, &typ, &raw, &sum); err != nil {
			return nil, err
		}
		e, err := store.EventOf(seq, typ, raw, uint32(sum))
		if err != nil {
			return nil, fmt.Errorf("event %s:%d: %w", executionID, seq, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

func (s *Store) LastSequence(executionID string) (int64, error) {
	var last int64
	_, err := s.getOne(`SELECT coalesce(max(sequence), 0) FROM events WHERE execution_id = $1`, []any{executionID}, &last)
	return last, err
}

func (s *Store) Artifacts(executionID string) (_ []api.Artifact, err error) {
	defer func() { err = readError(err) }()
	ctx, cancel := s.opCtx()
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT record FROM artifacts WHERE execution_id = $1 ORDER BY idx`, executionID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []api.Artifact{}
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, err
		}
		var a api.Artifact
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, fmt.Errorf("artifact of %s: %w", executionID, err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// ForEachExecution walks the records in id order. The walk reads them a page at a time (keyset
// pagination), so neither a long walk nor a slow visit holds a transaction or a connection.
func (s *Store) ForEachExecution(visit func(store.Execution) bool, undecodable func(id string, err error)) error {
	const page = 500
	after := ""
	for {
		ids, raws, err := s.executionPage(after, page)
		if err != nil {
			return err
		}
		for i, raw := range raws {
			var rec store.Execution
			if err := json.Unmarshal(raw, &rec); err != nil {
				undecodable(ids[i], err)
				continue
			}
			if !visit(rec) {
				return nil
			}
		}
		if len(ids) < page {
			return nil
		}
		after = ids[len(ids)-1]
	}
}

func (s *Store) executionPage(after string, limit int) (ids []string, raws [][]byte, err error) {
	defer func() { err = readError(err) }()
	ctx, cancel := s.opCtx()
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT id, record FROM executions WHERE id > $1 ORDER BY id LIMIT $2`, after, limit)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var raw []byte
		if err := rows.Scan(&id, &raw); err != nil {
			return nil, nil, err
		}
		ids, raws = append(ids, id), append(raws, raw)
	}
	return ids, raws, rows.Err()
}

// ListExecutions walks the listing index (tenant, [conversation,] created_ms, id) newest first.
// It reads one row more than the page holds: that row tells whether another page follows. A
// row whose record cannot be decoded is skipped (q.Undecodable) but still counts as a row, and
// the next page starts after the last row of this one, read from the index columns: so a page
// with a damaged record is one record short, and the listing neither stops early nor repeats.
func (s *Store) ListExecutions(q store.ListQuery) (_ []store.Execution, _ *store.ListPosition, err error) {
	defer func() { err = readError(err) }()
	ctx, cancel := s.opCtx()
	defer cancel()
	sql := `SELECT created_ms, id, record FROM executions WHERE tenant = $1`
	args := []any{q.Tenant}
	if q.ConversationID != "" {
		args = append(args, q.ConversationID)
		sql += fmt.Sprintf(` AND conversation_id = $%d`, len(args))
	}
	if q.States != nil {
		states := make([]string, 0, len(q.States))
		for st, ok := range q.States {
			if ok {
				states = append(states, string(st))
			}
		}
		args = append(args, states)
		sql += fmt.Sprintf(` AND state = ANY($%d)`, len(args))
	}
	if q.After != nil {
		args = append(args, int64(q.After.CreatedMs), q.After.ID)
		sql += fmt.Sprintf(` AND (created_ms, id) < ($%d, $%d)`, len(args)-1, len(args))
	}
	args = append(args, q.Limit+1) // one more tells whether another page follows
	sql += fmt.Sprintf(` ORDER BY created_ms DESC, id DESC LIMIT $%d`, len(args))
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var (
		out  []store.Execution
		read int                // rows, decodable or not
		last store.ListPosition // of the q.Limit-th row
	)
	for rows.Next() {
		var (
			createdMs int64
			id        string
			raw       []byte
		)
		if err := rows.Scan(&createdMs, &id, &raw); err != nil {
			return nil, nil, err
		}
		read++
		if read > q.Limit {
			break // the extra row: another page follows
		}
		last = store.ListPosition{CreatedMs: uint64(createdMs), ID: id}
		var rec store.Execution
		if err := json.Unmarshal(raw, &rec); err != nil {
			if q.Undecodable != nil {
				q.Undecodable(id, fmt.Errorf("%w: %w", store.ErrUndecodable, err))
			}
			continue
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	if read > q.Limit {
		return out, &last, nil
	}
	return out, nil, nil
}
