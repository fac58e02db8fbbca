package postgres

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/harness-edge/harness-edge/backend/store"
)

// groupWriter merges a group's batches per table (a later put of a key wins, as it would
// applied in order) before flush.go turns them into statements.

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

	// turns is what the group's turns read (turns.go); nil when it has none.
	turns *storedTurns
	// admissions is each admitting tenant's executions as the group leaves them so far
	// (admission.go); nil when the group has no admission.
	admissions map[string]store.AdmissionView

	// tx and ctx are the group's transaction, for erasures, which run where their batch
	// stands (erasure.go); erased is the tombstone of each conversation the group erased.
	tx     pgx.Tx
	ctx    context.Context
	erased map[string]store.Tombstone

	conversations keyed[store.Conversation]
	executions    keyed[store.Execution]
	events        struct {
		ids   []string
		seqs  []int64
		types []string
		data  [][]byte
		sums  []int32 // store.EventChecksum, as the column's signed integer
	}
	artifacts     keyed[store.Artifact]
	actions       keyed[store.Action]
	idempotency   []store.Idempotency
	checkpoints   keyed[[]byte]
	providerState keyed[[]byte]
	outbox        keyed[store.Notification]
}

// sizeFor makes room for n events, so the columns and the NOTIFY's map are not grown (and
// copied) a few times per commit as the events are added.
func (w *groupWriter) sizeFor(n int) {
	w.lastSeq = make(map[string]int64, n)
	w.events.ids, w.events.seqs, w.events.types = make([]string, 0, n), make([]int64, 0, n), make([]string, 0, n)
	w.events.data, w.events.sums = make([][]byte, 0, n), make([]int32, 0, n)
}

// keyed keeps the last value put under each key, in first-put order.
type keyed[V any] struct {
	keys   []string
	values map[string]V
}

func (w *groupWriter) add(b *store.Batch, p store.OutboxPlanner, now time.Time) error {
	if len(b.Turns) > 0 {
		if err := w.settleTurns(b); err != nil {
			return err
		}
	}
	if len(b.Admissions) > 0 {
		if err := w.settleAdmissions(b); err != nil {
			return err
		}
	}
	w.noteForAdmissions(b)
	w.queueSeals(b) // seal.go
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
		w.events.sums = append(w.events.sums, int32(store.ChecksumOf(e.Event)))
		w.lastSeq[e.ExecutionID] = max(w.lastSeq[e.ExecutionID], e.Event.Sequence)
	}
	for _, a := range b.Artifacts {
		w.artifacts.put(a.Artifact.ExecutionID+"\x00"+strconv.Itoa(a.Index), a)
	}
	for _, a := range b.Actions {
		w.actions.put(a.Request.ID, a)
	}
	w.queueRules(b.Rules) // approvals.go
	w.idempotency = append(w.idempotency, b.Idempotency...)
	for _, c := range b.Checkpoints {
		w.checkpoints.put(c.ExecutionID, c.Data)
	}
	for _, st := range b.ProviderState {
		w.providerState.put(st.Key, st.Value)
	}
	if len(b.ProviderStateDeletions) > 0 {
		w.flush() // what earlier batches put is written before this batch deletes
		keys := make([][]byte, len(b.ProviderStateDeletions))
		for i, key := range b.ProviderStateDeletions {
			keys[i] = []byte(key)
		}
		w.stmts.Queue(`DELETE FROM provider_state WHERE key = ANY($1)`, keys)
	}
	w.queueUsage(b.Usage)
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
	if len(b.Erasures) > 0 {
		return w.erase(b, p) // after the batch's other writes, as on bbolt
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
