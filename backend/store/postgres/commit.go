package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/harness-edge/harness-edge/backend/store"
)

// notifyChannel is the LISTEN/NOTIFY channel of every node of one database.
const notifyChannel = "harness_edge"

// applyGroup writes the batches of group in one transaction (store.Committer's apply). The
// rows of consecutive batches are merged per table (a later put of the same key wins, as it
// would applied in order) and every statement goes out in one pgx batch: one round trip for
// the writes, whatever the number of batches. A batch with Deletions is a boundary: what came
// before it is written first, so order is kept.
func (s *Store) applyGroup(group []*store.Request) error {
	ctx, cancel := context.WithDeadline(context.Background(), s.groupDeadline(group))
	defer cancel()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)

	planner := s.planner()
	w := &groupWriter{node: s.node, stmts: &pgx.Batch{}, latest: map[string]store.Execution{}, lastSeq: map[string]int64{}}
	w.tolerant = retried(group)
	w.copyEvents = copyable(group) && !w.tolerant
	// The fence first: whatever else the transaction does happens only while this node holds
	// every lease epoch its batches were written under (migrations/00002_lease_epochs.sql).
	if leases := leasesOf(group); len(leases) > 0 {
		const fence = `SELECT harness_fence($1, e) FROM unnest($2::int8[]) e`
		if w.copyEvents {
			if _, err := tx.Exec(ctx, fence, s.node, leases); err != nil {
				return commitError(err)
			}
		} else {
			w.stmts.Queue(fence, s.node, leases)
		}
	}
	if planner != nil {
		if w.stored, err = storedSnapshots(ctx, tx, group, planner); err != nil {
			return err
		}
	}
	now := time.Now()
	for _, req := range group {
		if err := w.add(req.Batch, planner, now); err != nil {
			return err
		}
	}
	w.flush()
	w.notify()
	if w.err != nil {
		return w.err
	}
	if len(w.copied) > 0 {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"events"}, []string{"execution_id", "sequence", "type", "data"}, pgx.CopyFromRows(w.copied)); err != nil {
			return commitError(err)
		}
	}
	if w.stmts.Len() > 0 {
		if err := tx.SendBatch(ctx, w.stmts).Close(); err != nil {
			return commitError(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		if unreachable(err) {
			// COMMIT may have reached the server before the connection was lost (a stall past
			// the deadline, a crash): the transaction may be applied.
			return fmt.Errorf("%w: %w", store.ErrOutcomeUnknown, err)
		}
		return commitError(err)
	}
	if w.wroteOutbox {
		planner.Committed()
	}
	return nil
}

// groupDeadline bounds a group's transaction: a stalled database fails it (and the Committer
// tries it again) instead of holding the commit goroutine, and a start is answered by its
// Request.Deadline.
func (s *Store) groupDeadline(group []*store.Request) time.Time {
	deadline := time.Now().Add(s.timeout)
	for _, req := range group {
		if !req.Deadline.IsZero() && req.Deadline.Before(deadline) {
			deadline = req.Deadline
		}
	}
	return deadline
}

// leasesOf lists the distinct lease epochs of group's batches (store.Batch.Lease), zero aside.
func leasesOf(group []*store.Request) []int64 {
	var out []int64
	for _, req := range group {
		if l := req.Batch.Lease; l != 0 && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

// retried reports whether a request of group was in a transaction that failed transiently: it
// may have been committed without this node learning it (a connection lost during COMMIT).
func retried(group []*store.Request) bool {
	for _, req := range group {
		if req.Attempts > 0 {
			return true
		}
	}
	return false
}

// copyable reports whether group's events go by COPY: many, and no deletion among its batches.
func copyable(group []*store.Request) bool {
	events := 0
	for _, req := range group {
		if len(req.Batch.Deletions) > 0 {
			return false
		}
		events += len(req.Batch.Events)
	}
	return events >= 256
}

// commitError makes a taken idempotency key store.ErrConflict, and a lost fence store.ErrFenced.
// A sequence that is already taken (events_pkey) is a fence too: only another writer of the
// execution can have taken it, so this node is no longer its owner, and no retry can succeed.
func commitError(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "HE001":
			return fmt.Errorf("%s: %w", pgErr.Message, store.ErrFenced)
		case pgErr.Code == "HE002":
			return fmt.Errorf("%s: %w", pgErr.Message, store.ErrConflict)
		case pgErr.Code == "23505" && pgErr.ConstraintName == "idempotency_key":
			return fmt.Errorf("%s: %w", pgErr.Detail, store.ErrConflict)
		case pgErr.Code == "23505" && pgErr.ConstraintName == "events_pkey":
			return fmt.Errorf("another writer took the event's sequence (%s): %w", pgErr.Detail, store.ErrFenced)
		}
	}
	return err
}

// storedSnapshots reads, in tx, the stored records of executions whose events the planner
// wants and whose batch carries no record of its own (the webhook payload's snapshot).
func storedSnapshots(ctx context.Context, tx pgx.Tx, group []*store.Request, p store.OutboxPlanner) (map[string]store.Execution, error) {
	var ids []string
	inGroup := map[string]bool{}
	for _, req := range group {
		for _, rec := range req.Batch.Executions {
			inGroup[rec.Execution.ID] = true
		}
		for _, e := range req.Batch.Events {
			if !inGroup[e.ExecutionID] && p.Wants(e.Event.Type) {
				inGroup[e.ExecutionID] = true // asked once
				ids = append(ids, e.ExecutionID)
			}
		}
	}
	out := map[string]store.Execution{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, `SELECT id, record FROM executions WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var raw []byte
		if err := rows.Scan(&id, &raw); err != nil {
			return nil, err
		}
		var rec store.Execution
		if err := json.Unmarshal(raw, &rec); err != nil {
			return nil, fmt.Errorf("webhook snapshot of %s: %w", id, err)
		}
		out[id] = rec
	}
	return out, rows.Err()
}

// groupWriter gathers a group's rows per table and turns them into statements.
type groupWriter struct {
	node  string
	stmts *pgx.Batch

	// latest is the last record put for each execution in the group so far; stored what the
	// database had before it (storedSnapshots). Together: the execution as the transaction
	// leaves it at each batch, for the outbox planner.
	latest map[string]store.Execution
	stored map[string]store.Execution
	// lastSeq is the last sequence written per execution: the NOTIFY payloads.
	lastSeq     map[string]int64
	wroteOutbox bool
	err         error // the first record that could not be encoded
	// tolerant: the group is a retry after a transient failure (see retried).
	tolerant bool
	// copyEvents sends the events with COPY (copied) ahead of the statements: about twice as
	// fast as a multi-row INSERT for large groups. Only for groups without deletions, whose
	// order against the events it would not keep.
	copyEvents bool
	copied     [][]any

	conversations keyed[store.Conversation]
	executions    keyed[store.Execution]
	events        struct {
		ids   []string
		seqs  []int64
		types []string
		data  [][]byte
	}
	artifacts     keyed[store.Artifact]
	actions       keyed[store.Action]
	idempotency   []store.Idempotency
	checkpoints   keyed[[]byte]
	providerState keyed[[]byte]
	outbox        keyed[store.Notification]
}

// keyed keeps the last value put under each key, in first-put order.
type keyed[V any] struct {
	keys   []string
	values map[string]V
}

func (k *keyed[V]) put(key string, v V) {
	if k.values == nil {
		k.values = map[string]V{}
	}
	if _, ok := k.values[key]; !ok {
		k.keys = append(k.keys, key)
	}
	k.values[key] = v
}

func (k *keyed[V]) each(fn func(V)) {
	for _, key := range k.keys {
		fn(k.values[key])
	}
}

func (k *keyed[V]) len() int { return len(k.keys) }

func (k *keyed[V]) reset() { k.keys, k.values = k.keys[:0], nil }

func (w *groupWriter) add(b *store.Batch, p store.OutboxPlanner, now time.Time) error {
	if len(b.Deletions) > 0 {
		w.flush() // what earlier batches put is written before this batch deletes
	}
	for _, c := range b.Conversations {
		w.conversations.put(c.ID, c)
	}
	for _, rec := range b.Executions {
		w.executions.put(rec.Execution.ID, rec)
		w.latest[rec.Execution.ID] = rec
	}
	for _, e := range b.Events {
		w.events.ids = append(w.events.ids, e.ExecutionID)
		w.events.seqs = append(w.events.seqs, e.Event.Sequence)
		w.events.types = append(w.events.types, string(e.Event.Type))
		w.events.data = append(w.events.data, e.Event.JSON)
		w.lastSeq[e.ExecutionID] = max(w.lastSeq[e.ExecutionID], e.Event.Sequence)
	}
	for _, a := range b.Artifacts {
		w.artifacts.put(a.Artifact.ExecutionID+"\x00"+strconv.Itoa(a.Index), a)
	}
	for _, a := range b.Actions {
		w.actions.put(a.Request.ID, a)
	}
	w.idempotency = append(w.idempotency, b.Idempotency...)
	for _, c := range b.Checkpoints {
		w.checkpoints.put(c.ExecutionID, c.Data)
	}
	for _, st := range b.ProviderState {
		w.providerState.put(st.Key, st.Value)
	}
	if p != nil {
		if err := w.plan(b, p, now); err != nil {
			return err
		}
	}
	if len(b.Deletions) > 0 {
		w.flush()
		w.deletions(b.Deletions)
	}
	if len(b.OutboxResults) > 0 {
		w.flush() // the rows a result refers to are written first
		w.outboxResults(b.OutboxResults)
	}
	return nil
}

// plan makes the outbox rows for b's events (see store.OutboxPlanner).
func (w *groupWriter) plan(b *store.Batch, p store.OutboxPlanner, now time.Time) error {
	for _, e := range b.Events {
		if !p.Wants(e.Event.Type) {
			continue
		}
		rec, ok := w.latest[e.ExecutionID]
		if !ok {
			if rec, ok = w.stored[e.ExecutionID]; !ok {
				return fmt.Errorf("webhook snapshot of %s: no execution record", e.ExecutionID)
			}
		}
		rows, err := p.Notifications(e.ExecutionID, e.Event, rec, now)
		if err != nil {
			return err
		}
		for _, n := range rows {
			w.outbox.put(string(outboxKey(&n)), n)
			w.wroteOutbox = true
		}
	}
	return nil
}

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
			ON CONFLICT (id) DO UPDATE SET tenant = EXCLUDED.tenant, record = EXCLUDED.record`, ids, tenants, records)
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
			WHERE executions.state NOT IN ('succeeded', 'failed', 'cancelled')`, ids, tenants, convs, states, owners, created, records)
		w.executions.reset()
	}
	if w.copyEvents {
		for i, id := range w.events.ids {
			w.copied = append(w.copied, []any{id, w.events.seqs[i], w.events.types[i], w.events.data[i]})
		}
		w.events.ids, w.events.seqs, w.events.types, w.events.data = nil, nil, nil, nil
	}
	if len(w.events.ids) > 0 {
		conflict := ""
		if w.tolerant {
			// A retry of a transaction that may have committed: the events it wrote are its
			// own (the fence above rules out any other writer), so they are not written twice.
			conflict = ` ON CONFLICT (execution_id, sequence) DO NOTHING`
		}
		w.stmts.Queue(`INSERT INTO events (execution_id, sequence, type, data)
			SELECT * FROM unnest($1::text[], $2::int8[], $3::text[], $4::bytea[])`+conflict, w.events.ids, w.events.seqs, w.events.types, w.events.data)
		w.events.ids, w.events.seqs, w.events.types, w.events.data = nil, nil, nil, nil
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

// notify queues one NOTIFY per execution whose events the group wrote: "e <sequence> <id>".
// Sent inside the transaction, PostgreSQL delivers them when (and only if) it commits.
func (w *groupWriter) notify() {
	if len(w.lastSeq) == 0 {
		return
	}
	payloads := make([]string, 0, len(w.lastSeq))
	for id, seq := range w.lastSeq {
		payloads = append(payloads, eventsPayload(id, seq))
	}
	w.stmts.Queue(`SELECT pg_notify('`+notifyChannel+`', p) FROM unnest($1::text[]) p`, payloads)
}

// encode is v's JSON; an error (a record holding invalid raw JSON) fails the transaction.
func (w *groupWriter) encode(v any) string {
	raw, err := json.Marshal(v)
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("encode %T: %w", v, err)
	}
	return string(raw)
}
