package bolt

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend/store"
)

// Trimming the stream log: whole blocks older than a time, with the conversation index keys that
// only they needed, and the oldest position kept.

// trimLogBlocks bounds the blocks one trimming transaction removes, so that it holds the
// file's single writer (and so the commit goroutine) only briefly.
const trimLogBlocks = 256

// TrimLog removes the entries committed before the given time (store.StreamLog): whole blocks
// (one commit's entries share a time), oldest first, in short transactions of their own
// beside the group commits.
func (s *Store) TrimLog(before time.Time) (store.LogBounds, error) {
	cutoff := before.UnixMilli()
	for {
		removed, done := 0, false
		err := s.db.Update(func(tx *bbolt.Tx) error {
			c := tx.Bucket(bucketStreamLog).Cursor()
			byConv := tx.Bucket(bucketStreamByConversation)
			var block logBlock
			convs := map[string]bool{}
			next := int64(0)
			for k, v := c.First(); ; k, v = c.First() {
				if k == nil {
					done, next = true, s.log.last.Load()+1
					break
				}
				first := int64(binary.BigEndian.Uint64(k))
				if err := decodeLogBlock(first, v, &block); err != nil {
					return err
				}
				if block.ms >= cutoff || removed == trimLogBlocks {
					done, next = block.ms >= cutoff, first
					break
				}
				for i := range block.entries {
					if conv := block.entries[i].scope[1]; len(conv) > 0 {
						convs[string(conv)] = true
					}
				}
				if err := c.Delete(); err != nil {
					return err
				}
				removed++
			}
			if removed == 0 {
				return nil
			}
			// The conversation index keys whose positions are all trimmed now.
			for conv := range convs {
				if err := trimConversationIndex(byConv, conv, next); err != nil {
					return err
				}
			}
			return tx.Bucket(bucketMeta).Put(metaStreamOldest, []byte(strconv.FormatInt(next, 10)))
		})
		if err != nil {
			return store.LogBounds{}, err
		}
		if removed > 0 {
			s.log.oldest.Store(max(s.log.oldest.Load(), s.nextOldest()))
		}
		if done || removed == 0 {
			return s.StreamLogBounds()
		}
	}
}

// trimConversationIndex deletes conv's index keys whose positions all come before oldest.
func trimConversationIndex(b *bbolt.Bucket, conv string, oldest int64) error {
	prefix := append([]byte(conv), 0)
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+8; k, v = c.Seek(prefix) {
		base := int64(binary.BigEndian.Uint64(k[len(prefix):]))
		n, m := binary.Uvarint(v)
		if m <= 0 {
			return badBlock(base)
		}
		v = v[m:]
		last := base
		for range n {
			d, m := binary.Uvarint(v)
			if m <= 0 {
				return badBlock(base)
			}
			v, last = v[m:], base+int64(d)
		}
		if last >= oldest {
			return nil
		}
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// nextOldest reads the oldest position the last trim recorded.
func (s *Store) nextOldest() int64 {
	var oldest int64 = 1
	_ = s.db.View(func(tx *bbolt.Tx) error {
		var err error
		oldest, err = readOldest(tx.Bucket(bucketMeta))
		return err
	})
	return oldest
}
