package postgres

import (
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/harness-edge/harness-edge/backend/store"
)

// Erasing a conversation (store.Batch.Erasures; migrations/00012_conversation_erasure.sql has
// the functions and why row locks make it exact across nodes). An erasure is run where its
// batch stands in the group: what earlier batches queued is sent first, then the function,
// synchronously — its answer (the number of executions erased) goes into the tombstone the
// webhook rows and the stream log's marker carry.

// hasErasures reports whether a batch of group erases a conversation.
func hasErasures(group []*store.Request) bool {
	for _, req := range group {
		if len(req.Batch.Erasures) > 0 {
			return true
		}
	}
	return false
}

// conversationsWritten lists the conversations group's batches write into: those whose rows
// are locked (a conversation record or an execution: a start) and those only checked against
// the tombstones (events, usage, idempotency records, rules of existing executions).
func conversationsWritten(group []*store.Request) (locked, checked []string) {
	seenL, seenC := map[string]bool{}, map[string]bool{}
	add := func(list *[]string, seen map[string]bool, id string) {
		if id != "" && !seen[id] {
			seen[id] = true
			*list = append(*list, id)
		}
	}
	for _, req := range group {
		b := req.Batch
		for _, c := range b.Conversations {
			add(&locked, seenL, c.ID)
		}
		for i := range b.Executions {
			add(&locked, seenL, b.Executions[i].Execution.ConversationID)
		}
		last := ""
		for i := range b.Events {
			if sc := b.Events[i].Scope; sc != nil && sc.ConversationID != last {
				last = sc.ConversationID
				add(&checked, seenC, last)
			}
		}
		for _, u := range b.Usage {
			add(&checked, seenC, u.ConversationID)
		}
		for _, r := range b.Idempotency {
			add(&checked, seenC, r.ConversationID)
		}
		for _, r := range b.Rules {
			if r.ConversationID != nil {
				add(&checked, seenC, *r.ConversationID)
			}
		}
	}
	return locked, checked
}

// queueConversationsOpen queues the check that group writes into no erased conversation,
// locking the rows of those it starts executions in (nothing when it writes into none).
func queueConversationsOpen(stmts *pgx.Batch, locked, checked []string) {
	if len(locked) > 0 || len(checked) > 0 {
		stmts.Queue(`SELECT harness_conversations_open($1::text[], $2::text[])`, textArray(nonNil(locked)), textArray(nonNil(checked)))
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// erase runs b's erasures in the transaction, after everything queued before them, and plans
// their webhook rows.
func (w *groupWriter) erase(b *store.Batch, p store.OutboxPlanner) error {
	w.flush()
	if w.stmts.Len() > 0 {
		if err := w.tx.SendBatch(w.ctx, w.stmts).Close(); err != nil {
			return commitError(err)
		}
		w.stmts = &pgx.Batch{}
	}
	ep, _ := p.(store.ErasurePlanner)
	for _, e := range b.Erasures {
		t := store.Tombstone{ConversationID: e.ConversationID, Tenant: e.Tenant, DeletedAt: e.At.UTC().Truncate(time.Microsecond)}
		if err := w.tx.QueryRow(w.ctx, `SELECT harness_erase_conversation($1, $2, $3)`, e.ConversationID, e.Tenant, t.DeletedAt).Scan(&t.Executions); err != nil {
			return commitError(err)
		}
		if w.erased == nil {
			w.erased = map[string]store.Tombstone{}
		}
		w.erased[e.ConversationID] = t
		w.lastSeq[e.ConversationID] = 0 // a NOTIFY "e 0 <conversation>": other nodes' streams read the log again
		if ep != nil {
			rows, err := ep.ErasureNotifications(t, e.At)
			if err != nil {
				return err
			}
			for _, n := range rows {
				w.outbox.put(string(outboxKey(&n)), n)
				w.wroteOutbox = true
			}
		}
	}
	return nil
}

// Tombstone reads an erased conversation's tombstone (store.ErasureReader).
func (s *Store) Tombstone(conversationID string) (store.Tombstone, bool, error) {
	t := store.Tombstone{ConversationID: conversationID}
	found, err := s.getOne(`SELECT tenant, deleted_at, executions FROM conversation_tombstones WHERE conversation_id = $1`,
		[]any{conversationID}, &t.Tenant, &t.DeletedAt, &t.Executions)
	t.DeletedAt = t.DeletedAt.UTC()
	return t, found, err
}

var _ store.ErasureReader = (*Store)(nil)
