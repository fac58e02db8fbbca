package postgres

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
)

// flush turns what a group's batches wrote, merged per table, into the statements of its one
// transaction; deletions, the webhook outbox's results and the commit notices come after.

func outboxKey(n *store.Notification) []byte {
	return append(strconv.AppendInt([]byte(n.ExecutionID+"\x00"), n.Sequence, 10), n.Target[:]...)
}

// flush turns the rows gathered so far into statements, one per table.
func (w *groupWriter) flush() {
	if n := w.conversations.len(); n > 0 {
		ids, tenants, records := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
		w.conversations.each(func(c store.Conversation) {
			ids, tenants, records = append(ids, c.ID), append(tenants, c.Tenant), append(records, w.encode(c))
		})
		w.stmts.Queue(`INSERT INTO conversations (id, tenant, record)
			SELECT * FROM unnest($1::text[], $2::text[], $3::json[])
			ON CONFLICT (id) DO UPDATE SET tenant = EXCLUDED.tenant, record = EXCLUDED.record`, textArray(ids), textArray(tenants), records)
		w.conversations.reset()
	}
	if n := w.executions.len(); n > 0 {
		var (
			ids, tenants, convs, states, owners, records = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
			created                                      = make([]int64, 0, n)
		)
		w.executions.each(func(rec store.Execution) {
			e := rec.Execution
			ids, tenants, convs = append(ids, e.ID), append(tenants, rec.Tenant), append(convs, e.ConversationID)
			states, owners, records = append(states, string(e.State)), append(owners, rec.Owner), append(records, w.encode(rec))
			created = append(created, int64(store.PositionOf(e).CreatedMs))
		})
		w.stmts.Queue(`INSERT INTO executions (id, tenant, conversation_id, state, owner, created_ms, record)
			SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int8[], $7::json[])
			ON CONFLICT (id) DO UPDATE SET tenant = EXCLUDED.tenant, conversation_id = EXCLUDED.conversation_id,
				state = EXCLUDED.state, owner = EXCLUDED.owner, created_ms = EXCLUDED.created_ms,
				record = EXCLUDED.record, updated_at = now()
			-- A terminal record is final: a node that was taken for dead (its lease expired
			-- while it was paused) must not overwrite the run.failed a takeover committed with,
			-- say, a late "cancelling" (docs/scale-out.md, fencing).
			WHERE executions.state NOT IN `+terminalStates,
			textArray(ids), textArray(tenants), textArray(convs), textArray(states), textArray(owners), int8Array(created), records)
		w.executions.reset()
	}
	if w.copyEvents {
		for i, id := range w.events.ids {
			w.copied = append(w.copied, []any{id, w.events.seqs[i], w.events.types[i], w.events.data[i], w.events.sums[i]})
		}
		w.events.ids, w.events.seqs, w.events.types, w.events.data, w.events.sums = nil, nil, nil, nil, nil
	}
	if len(w.events.ids) > 0 {
		conflict := ""
		if w.tolerant {
			// A retry of a transaction that may have committed: the events it wrote are its
			// own (the fence above rules out any other writer), so they are not written twice.
			conflict = ` ON CONFLICT (execution_id, sequence) DO NOTHING`
		}
		w.stmts.Queue(`INSERT INTO events (execution_id, sequence, type, data, checksum)
			SELECT * FROM unnest($1::text[], $2::int8[], $3::text[], $4::bytea[], $5::int4[])`+conflict,
			textArray(w.events.ids), int8Array(w.events.seqs), textArray(w.events.types), byteaArray(w.events.data), int4Array(w.events.sums))
		w.events.ids, w.events.seqs, w.events.types, w.events.data, w.events.sums = nil, nil, nil, nil, nil
	}
	if n := w.artifacts.len(); n > 0 {
		ids, idx, records := make([]string, 0, n), make([]int32, 0, n), make([]string, 0, n)
		w.artifacts.each(func(a store.Artifact) {
			ids, idx, records = append(ids, a.Artifact.ExecutionID), append(idx, int32(a.Index)), append(records, w.encode(a.Artifact))
		})
		w.stmts.Queue(`INSERT INTO artifacts (execution_id, idx, record)
			SELECT * FROM unnest($1::text[], $2::int4[], $3::json[])
			ON CONFLICT (execution_id, idx) DO UPDATE SET record = EXCLUDED.record`, ids, idx, records)
		w.artifacts.reset()
	}
	if n := w.actions.len(); n > 0 {
		ids, records := make([]string, 0, n), make([]string, 0, n)
		w.actions.each(func(a store.Action) { ids, records = append(ids, a.Request.ID), append(records, w.encode(a)) })
		w.stmts.Queue(`INSERT INTO actions (id, record) SELECT * FROM unnest($1::text[], $2::json[])
			ON CONFLICT (id) DO UPDATE SET record = EXCLUDED.record`, ids, records)
		w.actions.reset()
	}
	if n := len(w.idempotency); n > 0 {
		tenants, convs, keys, execs, records := make([]string, 0, n), make([]string, 0, n), make([][]byte, 0, n), make([]string, 0, n), make([]string, 0, n)
		for _, r := range w.idempotency {
			tenants, convs, keys = append(tenants, r.Tenant), append(convs, r.ConversationID), append(keys, []byte(r.Key))
			execs, records = append(execs, r.ExecutionID), append(records, w.encode(r))
		}
		// No ON CONFLICT: a key already taken (by any node, or twice in this group) fails the
		// transaction with a unique violation on idempotency_key, reported as ErrConflict. A
		// retry of a transaction that may have committed tolerates its own rows, and only those
		// (harness_idempotency_check, migration 2).
		conflict := ""
		if w.tolerant {
			conflict = ` ON CONFLICT (tenant, conversation_id, key) DO NOTHING`
		}
		w.stmts.Queue(`INSERT INTO idempotency (tenant, conversation_id, key, execution_id, record)
			SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[], $4::text[], $5::json[])`+conflict, tenants, convs, keys, execs, records)
		if w.tolerant {
			w.stmts.Queue(`SELECT harness_idempotency_check($1::text[], $2::text[], $3::bytea[], $4::text[])`, tenants, convs, keys, execs)
		}
		w.idempotency = nil
	}
	if n := w.checkpoints.len(); n > 0 {
		ids, data := make([]string, 0, n), make([][]byte, 0, n)
		for _, id := range w.checkpoints.keys {
			ids, data = append(ids, id), append(data, w.checkpoints.values[id])
		}
		w.stmts.Queue(`INSERT INTO checkpoints (execution_id, data) SELECT * FROM unnest($1::text[], $2::bytea[])
			ON CONFLICT (execution_id) DO UPDATE SET data = EXCLUDED.data`, ids, data)
		w.checkpoints.reset()
	}
	if n := w.providerState.len(); n > 0 {
		keys, values := make([][]byte, 0, n), make([][]byte, 0, n)
		for _, k := range w.providerState.keys {
			keys, values = append(keys, []byte(k)), append(values, w.providerState.values[k])
		}
		w.stmts.Queue(`INSERT INTO provider_state (key, value) SELECT * FROM unnest($1::bytea[], $2::bytea[])
			ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, keys, values)
		w.providerState.reset()
	}
	if n := w.outbox.len(); n > 0 {
		var (
			ids, records     = make([]string, 0, n), make([]string, 0, n)
			targets          = make([][]byte, 0, n)
			seqs             = make([]int64, 0, n)
			created, attempt = make([]time.Time, 0, n), make([]time.Time, 0, n)
		)
		w.outbox.each(func(n store.Notification) {
			ids, targets, seqs = append(ids, n.ExecutionID), append(targets, n.Target[:]), append(seqs, n.Sequence)
			created, attempt, records = append(created, n.CreatedAt), append(attempt, n.NextAttempt), append(records, w.encode(n))
		})
		w.stmts.Queue(`INSERT INTO webhook_outbox (execution_id, target, sequence, created_at, next_attempt, notification)
			SELECT * FROM unnest($1::text[], $2::bytea[], $3::int8[], $4::timestamptz[], $5::timestamptz[], $6::json[])
			ON CONFLICT (execution_id, target, sequence) DO UPDATE SET created_at = EXCLUDED.created_at,
				next_attempt = EXCLUDED.next_attempt, notification = EXCLUDED.notification,
				claimed_by = NULL, claimed_until = NULL`, ids, targets, seqs, created, attempt, records)
		w.outbox.reset()
	}
}

// deletions removes executions with everything that hangs off them (retention).
func (w *groupWriter) deletions(recs []store.Execution) {
	ids := make([]string, 0, len(recs))
	var actionIDs []string
	for _, rec := range recs {
		ids = append(ids, rec.Execution.ID)
		actionIDs = append(actionIDs, rec.ActionIDs...)
	}
	for _, table := range []string{"events", "artifacts", "checkpoints", "webhook_outbox", "webhook_failed", "commands"} {
		w.stmts.Queue(`DELETE FROM `+table+` WHERE execution_id = ANY($1)`, ids)
	}
	// The idempotency record only while it still points at the execution deleted.
	w.stmts.Queue(`DELETE FROM idempotency WHERE execution_id = ANY($1)`, ids)
	if len(actionIDs) > 0 {
		w.stmts.Queue(`DELETE FROM actions WHERE id = ANY($1)`, actionIDs)
	}
	w.stmts.Queue(`DELETE FROM executions WHERE id = ANY($1)`, ids)
}

// outboxResults applies the sender's outcomes, each only while the row is pending and not
// held by another node's live claim (that node sends it; at least once allows the repeat).
func (w *groupWriter) outboxResults(results []store.OutboxResult) {
	const mine = `execution_id = $1 AND target = $2 AND sequence = $3
		AND (claimed_by IS NULL OR claimed_by = $4 OR claimed_until < now())`
	for _, r := range results {
		n := r.Notification
		key := []any{n.ExecutionID, n.Target[:], n.Sequence, w.node}
		switch r.Outcome {
		case store.OutboxRetry:
			w.stmts.Queue(`UPDATE webhook_outbox SET next_attempt = $5, notification = $6,
				claimed_by = NULL, claimed_until = NULL WHERE `+mine, append(key, n.NextAttempt, w.encode(n))...)
		case store.OutboxDelivered:
			w.stmts.Queue(`DELETE FROM webhook_outbox WHERE `+mine, key...)
		case store.OutboxFailed:
			w.stmts.Queue(`WITH gone AS (DELETE FROM webhook_outbox WHERE `+mine+` RETURNING execution_id, target, sequence)
				INSERT INTO webhook_failed (execution_id, target, sequence, notification)
				SELECT execution_id, target, sequence, $5::json FROM gone
				ON CONFLICT (execution_id, sequence, target) DO UPDATE SET notification = EXCLUDED.notification`,
				append(key, w.encode(n))...)
		}
	}
}

// notify queues one NOTIFY per execution whose events the group wrote: "e <sequence> <id>"
// (eventsPayload, watch.go), put together by PostgreSQL from the ids and sequences, so the
// node does not allocate a payload string per execution and commit. Sent inside the
// transaction, PostgreSQL delivers them when (and only if) it commits.
func (w *groupWriter) notify() {
	if len(w.lastSeq) == 0 {
		return
	}
	ids, seqs := make([]string, 0, len(w.lastSeq)), make([]int64, 0, len(w.lastSeq))
	for id, seq := range w.lastSeq {
		ids, seqs = append(ids, id), append(seqs, seq)
	}
	w.stmts.Queue(`SELECT pg_notify('`+notifyChannel+`', `+eventsPayload+`)
		FROM unnest($1::text[], $2::int8[]) AS t(id, seq)`, textArray(ids), int8Array(seqs))
}

// encode is v's JSON; an error (a record holding invalid raw JSON) fails the transaction.
func (w *groupWriter) encode(v any) string {
	raw, err := json.Marshal(v)
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("encode %T: %w", v, err)
	}
	return string(raw)
}
