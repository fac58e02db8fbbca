package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
	w := &groupWriter{node: s.node, stmts: &pgx.Batch{}, latest: map[string]store.Execution{}, tx: tx, ctx: ctx}
	w.sizeFor(eventsIn(group))
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
	if hasTurns(group) {
		if w.turns, err = loadTurns(ctx, tx, group, w.tolerant); err != nil {
			return err
		}
	}
	if hasAdmissions(group) {
		if w.admissions, err = loadAdmissions(ctx, tx, group); err != nil {
			return err
		}
	}
	// No write into an erased conversation; the rows of the conversations it starts
	// executions in stay locked against an erasure until COMMIT (erasure.go).
	locked, checked := conversationsWritten(group)
	queueConversationsOpen(w.stmts, locked, checked)
	queueConversationsUnsealed(w.stmts, group) // no start into a sealed conversation (seal.go)
	now := time.Now()
	for _, req := range group {
		if err := w.add(req.Batch, planner, now); err != nil {
			return err
		}
	}
	w.flush()
	if hasErasures(group) {
		// Again after the erasures: a batch of the group that writes into a conversation an
		// earlier batch erased (or the erased conversation's last events, which the log write
		// below would number) fails the group, whose batches the Committer then applies alone.
		queueConversationsOpen(w.stmts, nil, append(locked, checked...))
	}
	w.notify()
	if w.err != nil {
		return w.err
	}
	if len(w.copied) > 0 {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"events"}, []string{"execution_id", "sequence", "type", "data", "checksum"}, pgx.CopyFromRows(w.copied)); err != nil {
			return commitError(err)
		}
	}
	// The stream log's numbering last: its lock is held from there to COMMIT (streamlog.go).
	logged := queueLogWrite(w.stmts, group, w.tolerant, w.erased)
	if w.stmts.Len() > 0 {
		if err := tx.SendBatch(ctx, w.stmts).Close(); err != nil {
			return commitError(err)
		}
	}
	if knownFault {
		knownFaultWait()
	}
	if s.beforeCommit != nil {
		s.beforeCommit()
	}
	if err := tx.Commit(ctx); err != nil {
		if unreachable(err) {
			// COMMIT may have reached the server before the connection was lost (a stall past
			// the deadline, a crash): the transaction may be applied.
			return fmt.Errorf("%w: %w", store.ErrOutcomeUnknown, err)
		}
		return commitError(err)
	}
	s.log.committed(logged)
	if w.wroteOutbox {
		planner.Committed()
	}
	return nil
}

// eventsIn counts the events of group's batches: what the per-event slices are sized for.
func eventsIn(group []*store.Request) int {
	n := 0
	for _, req := range group {
		n += len(req.Batch.Events)
	}
	return n
}

// groupDeadline bounds a group's transaction: a stalled database fails it (and the Committer
// tries it again) instead of holding the commit goroutine, and a start is answered by its
// Request.ApplyBy.
func (s *Store) groupDeadline(group []*store.Request) time.Time {
	deadline := time.Now().Add(s.timeout)
	for _, req := range group {
		if by := req.ApplyBy(); !by.IsZero() && by.Before(deadline) {
			deadline = by
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

// copyable reports whether group's events go by COPY: many, and no deletion or erasure among
// its batches.
func copyable(group []*store.Request) bool {
	events := 0
	for _, req := range group {
		if len(req.Batch.Deletions) > 0 || len(req.Batch.Erasures) > 0 {
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
		case pgErr.Code == "HE003": // migrations/00012_conversation_erasure.sql
			return fmt.Errorf("%s: %w", pgErr.Message, store.ErrConversationGone)
		case pgErr.Code == "HE004":
			return fmt.Errorf("%s: %w", pgErr.Message, store.ErrConversationBusy)
		case pgErr.Code == "HE005": // migrations/00013_conversation_seals.sql
			return fmt.Errorf("%s: %w", pgErr.Message, store.ErrConversationSealed)
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
	if err := executionRows(rows, "webhook snapshot of", func(id string, rec store.Execution) { out[id] = rec }); err != nil {
		return nil, err
	}
	return out, nil
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
