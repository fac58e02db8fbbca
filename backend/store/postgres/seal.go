package postgres

import (
	"github.com/jackc/pgx/v5"

	"github.com/harness-edge/harness-edge/backend/store"
)

// Sealing a conversation ahead of its erasure (store.Batch.Seals, backend/store/seal.go;
// migrations/00013_conversation_seals.sql has the functions and why the row lock of 00012
// makes a seal exact across nodes).

// queueSeals seals b's conversations where b stands in the group.
func (w *groupWriter) queueSeals(b *store.Batch) {
	if len(b.Seals) > 0 {
		w.flush() // a conversation record an earlier batch of the group put is there first
	}
	for _, e := range b.Seals {
		w.stmts.Queue(`SELECT harness_seal_conversation($1, $2, $3)`, e.ConversationID, e.Tenant, e.At.UTC())
	}
}

// queueConversationsUnsealed queues the check that group starts no execution in, and renames
// no, sealed conversation. It follows queueConversationsOpen, whose row locks it relies on.
func queueConversationsUnsealed(stmts *pgx.Batch, group []*store.Request) {
	var renamed, execIDs, execConvs []string
	for _, req := range group {
		for _, c := range req.Batch.Conversations {
			renamed = append(renamed, c.ID)
		}
		for i := range req.Batch.Executions {
			x := &req.Batch.Executions[i].Execution
			if x.ConversationID != "" {
				execIDs, execConvs = append(execIDs, x.ID), append(execConvs, x.ConversationID)
			}
		}
	}
	if len(renamed) > 0 || len(execIDs) > 0 {
		stmts.Queue(`SELECT harness_conversations_unsealed($1::text[], $2::text[], $3::text[])`, textArray(nonNil(renamed)), textArray(nonNil(execIDs)), textArray(nonNil(execConvs)))
	}
}

// Sealed lists the sealed conversations, oldest seal first (store.Sealer).
func (s *Store) Sealed() ([]store.ConversationErasure, error) {
	ctx, cancel := s.opCtx()
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT conversation_id, tenant, sealed_at FROM conversation_seals ORDER BY sealed_at, conversation_id`)
	if err != nil {
		return nil, readError(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.ConversationErasure, error) {
		var e store.ConversationErasure
		err := row.Scan(&e.ConversationID, &e.Tenant, &e.At)
		e.At = e.At.UTC()
		return e, err
	})
	return out, readError(err)
}

var _ store.Sealer = (*Store)(nil)
