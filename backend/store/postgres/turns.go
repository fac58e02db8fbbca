package postgres

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/harness-edge/harness-edge/backend/store"
)

// The busy policy's precondition across nodes (store.Turn, docs/storage.md "Busy
// conversations"). A group with turns first locks the rows of their conversations (FOR UPDATE,
// in id order, so two nodes never wait for each other in a circle), then reads the
// conversations' executions that are not terminal. Every node's turn on a conversation takes
// the same lock, so turns on one conversation are serialized across nodes: each sees every
// execution the turns before it created. The group's earlier batches are not in the database
// yet (its statements go out at the end, in one round trip): the group writer's view of them
// (groupWriter.latest) is laid over what was read. Starts under `parallel` carry no turn, take
// no lock and read nothing.

// storedTurns is what a group's turns read before its batches are added.
type storedTurns struct {
	// unfinished holds each conversation's executions that were not terminal when its row was
	// locked.
	unfinished map[string][]store.ListPosition
	// own holds, for a retried group (groupWriter.tolerant), the turns' own execution records
	// that a transaction whose outcome was lost already wrote: such a turn was settled then.
	own map[string]store.Execution
}

// hasTurns reports whether a batch of group carries a turn.
func hasTurns(group []*store.Request) bool {
	for _, req := range group {
		if len(req.Batch.Turns) > 0 {
			return true
		}
	}
	return false
}

// loadTurns locks the conversations of group's turns and reads their unfinished executions.
func loadTurns(ctx context.Context, tx pgx.Tx, group []*store.Request, tolerant bool) (*storedTurns, error) {
	var convs, tenants, ids []string
	tenantOf := map[string]string{}
	for _, req := range group {
		for _, rec := range req.Batch.Executions {
			tenantOf[rec.Execution.ID] = rec.Tenant
		}
		for _, t := range req.Batch.Turns {
			ids = append(ids, t.ExecutionID)
			if !slices.Contains(convs, t.ConversationID) {
				convs = append(convs, t.ConversationID)
				tenants = append(tenants, tenantOf[t.ExecutionID])
			}
		}
	}
	if _, err := tx.Exec(ctx, `SELECT id FROM conversations WHERE id = ANY($1) ORDER BY id FOR UPDATE`, convs); err != nil {
		return nil, commitError(err)
	}
	// executions_by_conversation_time leads with (tenant, conversation_id): a conversation's
	// executions are found there, and only the unfinished ones are returned.
	rows, err := tx.Query(ctx, `SELECT e.conversation_id, e.created_ms, e.id FROM executions e
		JOIN unnest($1::text[], $2::text[]) AS c(tenant, id) ON e.tenant = c.tenant AND e.conversation_id = c.id
		WHERE e.state NOT IN `+terminalStates+`
		ORDER BY e.created_ms, e.id`, tenants, convs)
	if err != nil {
		return nil, commitError(err)
	}
	st := &storedTurns{unfinished: map[string][]store.ListPosition{}}
	for rows.Next() {
		var conv, id string
		var ms int64
		if err := rows.Scan(&conv, &ms, &id); err != nil {
			rows.Close()
			return nil, err
		}
		st.unfinished[conv] = append(st.unfinished[conv], store.ListPosition{CreatedMs: uint64(ms), ID: id})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, commitError(err)
	}
	if !tolerant {
		return st, nil
	}
	rows, err = tx.Query(ctx, `SELECT id, record FROM executions WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, commitError(err)
	}
	st.own = map[string]store.Execution{}
	if err := executionRows(rows, "stored record of", func(id string, rec store.Execution) { st.own[id] = rec }); err != nil {
		return nil, err
	}
	return st, nil
}

// settleTurns settles b's turns (before its records are put): the stored unfinished
// executions, as the group's earlier batches left them, and the group's own unfinished ones.
func (w *groupWriter) settleTurns(b *store.Batch) error {
	for i := range b.Turns {
		t := &b.Turns[i]
		if t.Parallel {
			continue // it took the lock (loadTurns): nothing to check
		}
		if rec, ok := w.turns.own[t.ExecutionID]; ok {
			// Written by a transaction whose outcome was lost: settled then, and nothing
			// since may change what it found.
			if err := store.SettleTurn(b, t, rec.Execution.WaitingFor); err != nil {
				return err
			}
			continue
		}
		var others []store.ListPosition
		for _, p := range w.turns.unfinished[t.ConversationID] {
			if _, inGroup := w.latest[p.ID]; !inGroup {
				others = append(others, p)
			}
		}
		for _, rec := range w.latest { // the group's records as its earlier batches left them
			if rec.Execution.ConversationID == t.ConversationID && !rec.Execution.State.Terminal() {
				others = append(others, store.PositionOf(rec.Execution))
			}
		}
		slices.SortFunc(others, func(a, b store.ListPosition) int {
			switch {
			case a.Before(b):
				return -1
			case b.Before(a):
				return 1
			}
			return 0
		})
		ids := make([]string, 0, len(others))
		for _, p := range others {
			if p.ID != t.ExecutionID {
				ids = append(ids, p.ID)
			}
		}
		if err := store.SettleTurn(b, t, ids); err != nil {
			return err
		}
	}
	return nil
}
