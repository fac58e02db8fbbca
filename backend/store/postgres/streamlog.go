package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The stream log (store.StreamLog; migrations/00006_stream_log.sql). Positions are numbered
// under a lock: the last statement of every transaction that writes events moves the counter
// row (stream_log_state.last) by the number of its events and inserts their rows. The row lock
// is taken there and held to COMMIT, so transactions of every node number their events in
// commit order, and a reader of "position > cursor" never sees a position before the smaller
// ones are committed: no late commit can slip in behind a cursor. The price is that the tail
// of the commits of all nodes (that statement and COMMIT) is serialised; measured in
// docs/performance-log.md. The other sound scheme, numbering freely and reading only below the
// oldest transaction in flight (pg_snapshot_xmin), would let a reader on one node wait for a
// slow transaction of any other and needs xid bookkeeping per row.

// streamLog is this node's side of the log: its identity and the observer of local commits.
type streamLog struct {
	id string

	mu      sync.Mutex
	observe func([]store.LogEntry)
}

func openStreamLog(ctx context.Context, s *Store) (*streamLog, error) {
	l := &streamLog{}
	if err := s.pool.QueryRow(ctx, `SELECT id FROM stream_log_state`).Scan(&l.id); err != nil {
		return nil, fmt.Errorf("the stream log's identity: %w", err)
	}
	return l, nil
}

// logWrite is the log part of one transaction: the statement is queued last in its batch.
type logWrite struct {
	entries []store.LogEntry
	base    int64 // the position before the first entry (scanned from the statement)
	// tolerant: the transaction retries one that may have committed; only events not logged
	// yet are logged, so the numbering of entries is not known here and nothing is observed.
	tolerant bool
}

// The statement that numbers and inserts. It returns the position before the first entry.
const logInsert = `WITH rows AS (
	SELECT * FROM unnest($1::text[], $2::int8[], $3::text[], $4::text[], $5::text[], $6::text[]) WITH ORDINALITY
		AS t(execution_id, sequence, type, tenant, conversation_id, provider_id, ord)%s
), counter AS (
	UPDATE stream_log_state SET last = last + (SELECT count(*) FROM rows) RETURNING last - (SELECT count(*) FROM rows) AS base
), inserted AS (
	INSERT INTO stream_log (position, execution_id, sequence, type, tenant, conversation_id, provider_id)
	SELECT counter.base + row_number() OVER (ORDER BY rows.ord), rows.execution_id, rows.sequence, rows.type, rows.tenant, rows.conversation_id, rows.provider_id
	FROM counter, rows
)
SELECT base FROM counter`

// notLoggedYet keeps, on a retry, the events a transaction that may have committed did not log.
// That transaction was moments ago, so its rows are among the newest: the check walks the last
// million positions (a range of the primary key) rather than keep an index on (execution,
// sequence) that every commit would pay for, for a retry that happens when a connection is lost
// during COMMIT. An erasure's marker (no execution) is always logged: a retry of an erasure
// that did commit fails before it (the conversation is gone).
const notLoggedYet = `
	WHERE t.execution_id = '' OR NOT EXISTS (SELECT 1 FROM stream_log l
		WHERE l.position > (SELECT last - 1000000 FROM stream_log_state)
		AND l.execution_id = t.execution_id AND l.sequence = t.sequence)`

// queueLogWrite queues the group's log statement as the last of stmts; nil when the group
// wrote no event.
func queueLogWrite(stmts *pgx.Batch, group []*store.Request, tolerant bool, erased map[string]store.Tombstone) *logWrite {
	lw := &logWrite{tolerant: tolerant}
	n := 0 // the entries: sized once rather than grown as they are added
	for _, req := range group {
		n += len(req.Batch.Events) + len(req.Batch.Erasures)
	}
	if n == 0 {
		return nil
	}
	ids, types, tenants, convs, providers := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	seqs := make([]int64, 0, n)
	lw.entries = make([]store.LogEntry, 0, n)
	for _, req := range group {
		for _, e := range req.Batch.Events {
			var scope store.StreamScope
			if e.Scope != nil {
				scope = *e.Scope
			}
			ids, seqs, types = append(ids, e.ExecutionID), append(seqs, e.Event.Sequence), append(types, string(e.Event.Type))
			tenants, convs, providers = append(tenants, scope.Tenant), append(convs, scope.ConversationID), append(providers, scope.ProviderID)
			lw.entries = append(lw.entries, store.LogEntry{ExecutionID: e.ExecutionID, Scope: scope, Event: e.Event})
		}
		// An erasure's marker: a row with no execution, the conversation as its scope.
		for _, er := range req.Batch.Erasures {
			t, ok := erased[er.ConversationID]
			if !ok {
				continue
			}
			ids, seqs, types = append(ids, ""), append(seqs, 0), append(types, "")
			tenants, convs, providers = append(tenants, t.Tenant), append(convs, t.ConversationID), append(providers, "")
			lw.entries = append(lw.entries, store.LogEntry{Scope: store.StreamScope{Tenant: t.Tenant, ConversationID: t.ConversationID}, Erased: &t})
		}
	}
	if len(ids) == 0 {
		return nil
	}
	filter := ""
	if tolerant {
		filter = notLoggedYet
	}
	stmts.Queue(fmt.Sprintf(logInsert, filter), textArray(ids), int8Array(seqs), textArray(types),
		textArray(tenants), textArray(convs), textArray(providers)).QueryRow(func(row pgx.Row) error {
		return row.Scan(&lw.base)
	})
	return lw
}

// committed tells the observer of the entries a committed transaction logged.
func (l *streamLog) committed(lw *logWrite) {
	if lw == nil || lw.tolerant {
		return // (a retry's entries reach other readers through the log itself)
	}
	l.mu.Lock()
	observe := l.observe
	l.mu.Unlock()
	if observe == nil {
		return
	}
	for i := range lw.entries {
		lw.entries[i].Position = lw.base + int64(i) + 1
	}
	observe(lw.entries)
}

// StreamLogID is the log's identity (store.StreamLog), shared by every node of the database.
func (s *Store) StreamLogID() string { return s.log.id }

// ObserveLog sets the observer of this node's commits (store.StreamLog).
func (s *Store) ObserveLog(fn func([]store.LogEntry)) {
	s.log.mu.Lock()
	s.log.observe = fn
	s.log.mu.Unlock()
}

// StreamLogBounds are the log's ends as committed (store.StreamLog).
func (s *Store) StreamLogBounds() (store.LogBounds, error) {
	var b store.LogBounds
	_, err := s.getOne(`SELECT oldest, last FROM stream_log_state`, nil, &b.Oldest, &b.Last)
	return b, err
}

// ReadLog reads committed entries in position order (store.StreamLog). One statement, so one
// snapshot: the bounds it checks the cursor against and the rows it returns agree.
func (s *Store) ReadLog(q store.LogQuery) (store.LogPage, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = store.DefaultLogPage
	}
	scan := q.Scan
	if scan <= 0 {
		scan = 16 * limit
	}
	// The scope's filters go to the database (a conversation is a seek in its index); Match,
	// a Go function, is applied here, over at most scan rows. Without Match every row is
	// returned, so the database sends only a page of them.
	rowsWanted := scan
	if q.Match == nil {
		rowsWanted = limit
	}
	where, args := "l.position > $1", []any{q.After, rowsWanted}
	if q.ConversationID != "" {
		args = append(args, q.ConversationID)
		where += fmt.Sprintf(" AND l.conversation_id = $%d", len(args))
	}
	if !q.AnyTenant {
		args = append(args, q.Tenant)
		where += fmt.Sprintf(" AND l.tenant = $%d", len(args))
	}
	sql := `SELECT st.oldest, st.last, l.position, l.execution_id, l.sequence, l.type, l.tenant, l.conversation_id, l.provider_id, e.data, e.checksum,
		t.deleted_at, t.executions
	FROM stream_log_state st
	LEFT JOIN LATERAL (
		SELECT * FROM stream_log l WHERE ` + where + ` ORDER BY l.position LIMIT $2
	) l ON true
	LEFT JOIN events e ON e.execution_id = l.execution_id AND e.sequence = l.sequence
	LEFT JOIN conversation_tombstones t ON l.execution_id = '' AND t.conversation_id = l.conversation_id
	ORDER BY l.position`
	ctx, cancel := s.opCtx()
	defer cancel()
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return store.LogPage{}, readError(err)
	}
	defer rows.Close()
	page := store.LogPage{Reached: q.After}
	var oldest, last int64
	full := false
	scanned := 0
	// The scan targets are pgx's own nullable values, not pointers it would allocate per column,
	// and one set serves every row (each Scan writes every one). Handed to Scan as `any` they
	// live on the heap: in one struct that is one allocation per read, not one per target (and,
	// declared in the loop, per row). The hub reads the log after every commit.
	var r struct {
		pos, seq                            pgtype.Int8
		execID, typ, tenant, conv, provider pgtype.Text
		data                                []byte
		sum, erasedExecs                    pgtype.Int4
		erasedAt                            pgtype.Timestamptz
		entry                               store.LogEntry // given to Match by address: the same reason
	}
	dest := []any{&oldest, &last, &r.pos, &r.execID, &r.seq, &r.typ, &r.tenant, &r.conv, &r.provider, &r.data, &r.sum, &r.erasedAt, &r.erasedExecs}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return store.LogPage{}, readError(err)
		}
		if q.After < oldest-1 {
			return store.LogPage{}, fmt.Errorf("%w (after %d; the oldest kept is %d)", store.ErrCursorExpired, q.After, oldest)
		}
		if !r.pos.Valid || full {
			continue // no row at all (only the state), or past a full page
		}
		scanned++
		page.Reached = r.pos.Int64
		if r.execID.String == "" && r.erasedAt.Valid && r.erasedExecs.Valid {
			// An erasure's marker, with its tombstone.
			entry := store.LogEntry{Position: r.pos.Int64, Scope: store.StreamScope{Tenant: r.tenant.String, ConversationID: r.conv.String},
				Erased: &store.Tombstone{ConversationID: r.conv.String, Tenant: r.tenant.String, DeletedAt: r.erasedAt.Time.UTC(), Executions: int(r.erasedExecs.Int32)}}
			if q.Match == nil || q.Match(&entry) {
				page.Entries = append(page.Entries, entry)
				full = len(page.Entries) == limit
			}
			continue
		}
		if r.data == nil || !r.sum.Valid {
			continue // the execution was deleted
		}
		r.entry = store.LogEntry{Position: r.pos.Int64, ExecutionID: r.execID.String,
			Scope: store.StreamScope{Tenant: r.tenant.String, ConversationID: r.conv.String, ProviderID: r.provider.String}}
		r.entry.Event.Sequence, r.entry.Event.Type = r.seq.Int64, api.StandardEventType(r.typ.String)
		if q.Match != nil && !q.Match(&r.entry) {
			continue
		}
		ev, err := store.EventOf(r.seq.Int64, []byte(r.typ.String), r.data, uint32(r.sum.Int32))
		if err != nil {
			return store.LogPage{}, err
		}
		r.entry.Event = ev
		page.Entries = append(page.Entries, r.entry)
		full = len(page.Entries) == limit
	}
	if err := rows.Err(); err != nil {
		return store.LogPage{}, readError(err)
	}
	if !full && scanned < rowsWanted {
		// Every row after the cursor in this snapshot was examined: the read reached the end.
		page.Reached = max(page.Reached, last)
	}
	return page, nil
}

// trimLogBatch bounds the rows one trimming statement deletes.
const trimLogBatch = 10000

// TrimLog removes the entries committed before the given time (store.StreamLog), a bounded
// number per statement, and moves the recorded oldest position past them. It removes a prefix
// of the log: everything before the first entry committed at or after the time, so that an
// entry of a transaction that began earlier but committed later never leaves a hole.
func (s *Store) TrimLog(before time.Time) (store.LogBounds, error) {
	for {
		ctx, cancel := s.opCtx()
		var deleted int64
		err := s.pool.QueryRow(ctx, `WITH cut AS (
				SELECT coalesce(
					(SELECT position FROM stream_log WHERE committed_at >= $1 ORDER BY position LIMIT 1),
					(SELECT last + 1 FROM stream_log_state)) AS p
			), gone AS (
				DELETE FROM stream_log WHERE position IN (
					SELECT position FROM stream_log, cut WHERE position < cut.p ORDER BY position LIMIT $2)
				RETURNING position
			), moved AS (
				UPDATE stream_log_state SET oldest = greatest(oldest, (SELECT max(position) + 1 FROM gone))
				WHERE EXISTS (SELECT 1 FROM gone)
			)
			SELECT count(*) FROM gone`, before, trimLogBatch).Scan(&deleted)
		cancel()
		if err != nil {
			return store.LogBounds{}, readError(err)
		}
		if deleted < trimLogBatch {
			return s.StreamLogBounds()
		}
	}
}
