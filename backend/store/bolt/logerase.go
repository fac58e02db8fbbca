package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	bbolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Erasing a conversation from the stream log. Positions have no gaps (store.LogEntry), so an
// erased entry is not removed from its block: the block is written again with the entry made a
// hole — no execution, no scope, no type — that every read skips, as it skips an entry whose
// event is gone. The conversation's index keys are deleted. Then the commit appends one marker
// entry (no execution, the conversation's tenant and id as its scope, store.LogEntry.Erased
// when read) after everything else of the transaction, so a reader resuming after any of the
// erased positions meets the marker.
//
// Both holes and markers are entries of the block format (logblock.go) as it was: an
// "execution" with an empty id, a sequence of 1 and an empty type, so a release that predates
// them reads a hole or a marker as an event that is gone, and skips it.

// beginTx forgets what a previous, failed transaction noted (commit goroutine).
func (l *streamLog) beginTx() { clear(l.erasing) }

// erase turns t's conversation's entries into holes and deletes its index keys, in tx, and notes
// t for the marker write appends.
func (l *streamLog) erase(tx *bbolt.Tx, t store.Tombstone) error {
	conv := t.ConversationID
	var positions []int64
	// The positions the index holds, then those waiting for it.
	prefix := append([]byte(conv), 0)
	c := tx.Bucket(bucketStreamByConversation).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(k) != len(prefix)+8 {
			continue // another conversation's id that starts with this one and a 0 byte
		}
		base := int64(binary.BigEndian.Uint64(k[len(prefix):]))
		n, m := binary.Uvarint(v)
		if m <= 0 {
			return badBlock(base)
		}
		v = v[m:]
		for range n {
			d, m := binary.Uvarint(v)
			if m <= 0 {
				return badBlock(base)
			}
			v = v[m:]
			positions = append(positions, base+int64(d))
		}
	}
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); {
		if len(k) != len(prefix)+8 {
			k, _ = c.Next()
			continue
		}
		if err := c.Delete(); err != nil {
			return err
		}
		k, _ = c.Seek(prefix)
	}
	for _, w := range l.waiting {
		if w.conv == conv {
			positions = append(positions, w.pos)
		}
	}
	slices.Sort(positions)
	if err := l.punch(tx, conv, slices.Compact(positions)); err != nil {
		return err
	}
	if l.erasing == nil {
		l.erasing = map[string]store.Tombstone{}
	}
	l.erasing[conv] = t
	return nil
}

// punch writes again every block that holds one of positions (sorted), with conv's entries
// made holes. A position trimmed meanwhile is gone already.
func (l *streamLog) punch(tx *bbolt.Tx, conv string, positions []int64) error {
	log := tx.Bucket(bucketStreamLog)
	c := log.Cursor()
	w := logBlockWriter{execs: map[string]int{}}
	var block logBlock
	for len(positions) > 0 {
		k, v := blockAt(c, positions[0])
		if k == nil {
			return nil
		}
		first := int64(binary.BigEndian.Uint64(k))
		if err := decodeLogBlock(first, v, &block); err != nil {
			return err
		}
		if positions[0] < block.first || positions[0] > block.last() {
			positions = positions[1:] // trimmed
			continue
		}
		w.start(block.ms)
		for i := range block.entries {
			h := &block.entries[i]
			if string(h.scope[1]) == conv {
				w.add(&store.LogEntry{}) // a hole
				continue
			}
			w.add(&store.LogEntry{ExecutionID: string(h.execID), Scope: store.StreamScope{
				Tenant: string(h.scope[0]), ConversationID: string(h.scope[1]), ProviderID: string(h.scope[2])},
				Event: store.Event{Sequence: h.sequence, Type: api.StandardEventType(h.typ)}})
		}
		// The new value is whole before the put: block's slices point into the old one.
		value := bytes.Clone(w.finish(len(block.entries)))
		if err := log.Put(bytes.Clone(k), value); err != nil {
			return fmt.Errorf("write stream log block %d again: %w", first, err)
		}
		last := block.last()
		for len(positions) > 0 && positions[0] <= last {
			positions = positions[1:]
		}
		c = log.Cursor() // a put invalidates the cursor's position
	}
	return nil
}

// markers appends to pending the marker of each conversation req's batch erased, after pos;
// returns the last position.
func (l *streamLog) markers(req *store.Request, pos int64) int64 {
	for _, e := range req.Batch.Erasures {
		t, ok := l.erasing[e.ConversationID]
		if !ok {
			continue
		}
		pos++
		l.pending = append(l.pending, store.LogEntry{Position: pos,
			Scope: store.StreamScope{Tenant: t.Tenant, ConversationID: t.ConversationID}, Erased: &t})
	}
	return pos
}

// erasedInTx reports whether conv was erased by the transaction in progress: its events of
// earlier batches of the group get no position (they are deleted with it).
func (l *streamLog) erasedInTx(conv string) bool {
	_, ok := l.erasing[conv]
	return ok
}

// dropErased removes the waiting positions of conversations the committed transaction erased
// (their entries are holes now, their index keys gone).
func (l *streamLog) dropErased() {
	if len(l.erasing) == 0 {
		return
	}
	l.waiting = slices.DeleteFunc(l.waiting, func(w waitingPosition) bool { return l.erasedInTx(w.conv) })
}
