package bolt

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"

	bbolt "go.etcd.io/bbolt"
)

// Folding the stream log's conversation index (the why is in streamlog.go's overview): the
// positions that wait for the index, and the commit that writes them in.

// fold writes the conversation index for every position waiting and this transaction's, one
// key per conversation, and moves the mark to the transaction's last position. Positions
// trimmed meanwhile (older than the oldest kept) are left out.
func (l *streamLog) fold(tx *bbolt.Tx, keys *keyArena) error {
	meta := tx.Bucket(bucketMeta)
	oldest, err := readOldest(meta)
	if err != nil {
		return err
	}
	all := make([]waitingPosition, 0, len(l.waiting)+len(l.pending)) // a failed transaction keeps l.waiting as it was
	for _, w := range l.waiting {
		if !l.erasedInTx(w.conv) { // erased: holes now, not indexed
			all = append(all, w)
		}
	}
	for i := range l.pending {
		if c := l.pending[i].Scope.ConversationID; c != "" {
			all = append(all, waitingPosition{c, l.pending[i].Position})
		}
	}
	// By conversation (stable: each one's positions stay in order), so that the puts go down
	// the index in key order.
	slices.SortStableFunc(all, func(a, b waitingPosition) int { return strings.Compare(a.conv, b.conv) })
	byConv := tx.Bucket(bucketStreamByConversation)
	for len(all) > 0 {
		n := 1
		for n < len(all) && all[n].conv == all[0].conv {
			n++
		}
		run := all[:n]
		all = all[n:]
		for len(run) > 0 && run[0].pos < oldest {
			run = run[1:]
		}
		if len(run) == 0 {
			continue
		}
		value := make([]byte, 0, binary.MaxVarintLen64*(len(run)+1))
		value = binary.AppendUvarint(value, uint64(len(run)))
		for _, w := range run {
			value = binary.AppendUvarint(value, uint64(w.pos-run[0].pos))
		}
		if err := byConv.Put(conversationLogKey(keys.carve(len(run[0].conv)+9), run[0].conv, run[0].pos), value); err != nil {
			return fmt.Errorf("fold the stream log's conversation index: %w", err)
		}
	}
	last := l.pending[len(l.pending)-1].Position
	return meta.Put(metaStreamIndexed, []byte(strconv.FormatInt(last, 10)))
}

// waitingPosition is a position of a conversation that the index does not hold yet.
type waitingPosition struct {
	conv string
	pos  int64
}

// wait notes pos, of conversation conv, as waiting for the index.
func (l *streamLog) wait(conv string, pos int64) {
	if conv != "" {
		l.waiting = append(l.waiting, waitingPosition{conv, pos})
	}
}
