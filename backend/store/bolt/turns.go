package bolt

import (
	"bytes"
	"fmt"
	"slices"

	bbolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The busy policy's precondition (store.Turn, docs/storage.md "Busy conversations"). bbolt has
// one writer, the commit goroutine, so what a turn reads inside the write transaction is the
// whole truth at that point: every earlier commit, and the earlier batches of this one (a group
// with a turn writes every version of each record, see latestExecutionRecords).

// applyTurns settles b's turns before b's records are written.
func applyTurns(tx *bbolt.Tx, b *store.Batch, jt *journalTx) error {
	for i := range b.Turns {
		t := &b.Turns[i]
		if t.Parallel {
			continue // one writer: nothing to order
		}
		others, err := unfinishedInConversation(tx, jt, t.ConversationID, t.ExecutionID)
		if err != nil {
			return fmt.Errorf("turn of %s: %w", t.ExecutionID, err)
		}
		if err := store.SettleTurn(b, t, others); err != nil {
			return err
		}
	}
	return nil
}

// unfinishedInConversation lists the executions of conversationID other than self whose state
// is not terminal, oldest first. The conversation's keys are in executions_by_conversation and,
// until they are folded, in the index journal (its mirror, and what this transaction added);
// each key ends with the execution's executions_by_time key, whose value is its state.
func unfinishedInConversation(tx *bbolt.Tx, jt *journalTx, conversationID, self string) ([]string, error) {
	prefix := conversationIndexPrefix(conversationID)
	var keys [][]byte
	c := tx.Bucket(bucketExecutionsByConversation).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, k)
	}
	if !jt.folded {
		// Not folded in this transaction: the mirror holds what earlier commits journaled.
		keys = append(keys, jt.j.conversationKeys(conversationID)...)
	}
	for _, e := range jt.conv {
		if string(e[0]) == conversationID {
			keys = append(keys, e[1])
		}
	}
	slices.SortFunc(keys, bytes.Compare)
	keys = slices.CompactFunc(keys, bytes.Equal)
	byTime := tx.Bucket(bucketExecutionsByTime)
	var out []string
	for _, k := range keys {
		timeKey := k[len(prefix):]
		if len(timeKey) <= 8 {
			return nil, fmt.Errorf("executions_by_conversation key %x: %w", k, store.ErrUndecodable)
		}
		id := string(timeKey[8:])
		if id == self {
			continue
		}
		state := byTime.Get(timeKey)
		if state == nil {
			continue // deleted (retention), which only ever happens to terminal executions
		}
		if !api.ExecutionState(state).Terminal() {
			out = append(out, id)
		}
	}
	return out, nil
}
