package bolt

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend/store"
)

// The stream log (store.StreamLog; docs/storage.md, "The stream log"). Its buckets are apart
// from the format's own (layout.go) and are added to a file of any format on open, so a file
// written before them gains them without a migration: its log begins with the first event
// committed after the upgrade.
//
// Positions are numbered by the commit goroutine, the file's only writer, inside the
// transaction that writes the events, so position order is commit order. The log is written in
// blocks: one key per commit (per logBlockEntries entries of it), the big-endian position of
// its first entry, whose value holds all its entries. So a commit of any number of events adds
// one put, at the right edge of stream_log, instead of one per event: a bbolt put costs a
// cursor and node work whatever its size.
//
// The conversation index is folded, as the index journal is (journal.go): its keys would land
// under each conversation, one leaf per conversation per commit, the costliest part of a
// commit. The blocks already name every entry's conversation, so the index may lag behind them:
// it is complete up to the position recorded in meta (stream_indexed), and a conversation's
// read walks the index up to there and the blocks after it (at most Options.StreamIndexFold
// entries).
// When that many entries wait, the commit that reaches the bound writes one index key per
// conversation for all of them and moves the mark, in its own transaction's work. The commit
// goroutine keeps the waiting positions by conversation in memory, and rebuilds them from the
// blocks at open, so a crash loses nothing.
//
// The log's parts, a file each: the blocks' binary format (logblock.go), the folding of the
// conversation index (logfold.go), reading (logread.go) and trimming (logtrim.go); this file
// has its buckets, its opening, and the numbering and writing of a commit's entries.
var (
	bucketStreamLog            = []byte("stream_log")             // uint64 BE first position → a block of entries (logblock.go)
	bucketStreamByConversation = []byte("stream_by_conversation") // conversation id + 0x00 + uint64 BE first position → its positions of one fold

	metaStreamLogID   = []byte("stream_log_id")  // 32 lowercase hex digits, random, made once
	metaStreamOldest  = []byte("stream_oldest")  // decimal: the first position kept (absent: 1)
	metaStreamIndexed = []byte("stream_indexed") // decimal: the conversation index holds every position up to this one (absent: 0)
	streamLogBuckets  = [][]byte{bucketStreamLog, bucketStreamByConversation}
)

// DefaultStreamIndexFold is Options.StreamIndexFold's default: how many entries wait for the
// conversation index before a commit folds them in, the bound of the blocks a conversation's
// read walks past the index.
const DefaultStreamIndexFold = 4096

// streamLog is the store's side of the log: the identity, the ends, the numbering of the
// transaction in progress and the observer.
type streamLog struct {
	id     string
	last   atomic.Int64 // the last committed position
	oldest atomic.Int64 // the first position kept

	// Owned by the commit goroutine: the entries of the transaction in progress; the positions
	// after indexed that wait for the conversation index, in position order; whether the
	// transaction in progress folds them.
	pending []store.LogEntry
	erasing map[string]store.Tombstone // the conversations the transaction erases (logerase.go)
	blocks  logBlockWriter
	foldAt  int // Options.StreamIndexFold
	indexed int64
	waiting []waitingPosition
	folding bool

	mu      sync.Mutex
	observe func([]store.LogEntry)
}

// openStreamLog adds the log's buckets to the file if it lacks them, makes its identity once
// and reads its ends.
func openStreamLog(db *bbolt.DB, foldAt int) (*streamLog, error) {
	if foldAt <= 0 {
		foldAt = DefaultStreamIndexFold
	}
	l := &streamLog{foldAt: foldAt, blocks: logBlockWriter{execs: map[string]int{}}}
	err := db.Update(func(tx *bbolt.Tx) error {
		for _, name := range streamLogBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		meta := tx.Bucket(bucketMeta)
		if id := meta.Get(metaStreamLogID); id != nil {
			l.id = string(id)
		} else {
			var b [16]byte
			_, _ = rand.Read(b[:])
			l.id = hex.EncodeToString(b[:])
			if err := meta.Put(metaStreamLogID, []byte(l.id)); err != nil {
				return err
			}
		}
		oldest, err := readOldest(meta)
		if err != nil {
			return err
		}
		l.oldest.Store(oldest)
		last := oldest - 1
		if k, v := tx.Bucket(bucketStreamLog).Cursor().Last(); len(k) == 8 {
			first := int64(binary.BigEndian.Uint64(k))
			_, n, _, err := decodeLogBlockHead(first, v)
			if err != nil {
				return err
			}
			last = max(last, first+int64(n)-1)
		}
		l.last.Store(last)
		// The positions the index does not hold yet, from the blocks after its mark.
		if l.indexed, err = readPosition(meta, metaStreamIndexed, 0); err != nil {
			return err
		}
		c := tx.Bucket(bucketStreamLog).Cursor()
		var block logBlock
		for k, v := blockAt(c, l.indexed+1); k != nil; k, v = c.Next() {
			if err := decodeLogBlock(int64(binary.BigEndian.Uint64(k)), v, &block); err != nil {
				return err
			}
			for i := range block.entries {
				if pos := block.first + int64(i); pos > l.indexed {
					l.wait(string(block.entries[i].scope[1]), pos)
				}
			}
		}
		return nil
	})
	return l, err
}

func readOldest(meta *bbolt.Bucket) (int64, error) { return readPosition(meta, metaStreamOldest, 1) }

// readPosition reads a decimal position kept in meta under key (absent: def).
func readPosition(meta *bbolt.Bucket, key []byte, def int64) (int64, error) {
	raw := meta.Get(key)
	if raw == nil {
		return def, nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: the stream log's %s %q", store.ErrUndecodable, key, raw)
	}
	return n, nil
}

// write numbers the group's events after the last committed position and puts their blocks
// and index keys, inside the group's transaction. The numbering is undone if the transaction
// fails (committed is not called, and the next write starts from the last committed position).
func (l *streamLog) write(tx *bbolt.Tx, group []*store.Request, keys *keyArena, now time.Time) error {
	pos := l.last.Load()
	l.pending = l.pending[:0]
	for _, req := range group {
		for i := range req.Batch.Events {
			e := &req.Batch.Events[i]
			if len(l.erasing) > 0 && e.Scope != nil && l.erasedInTx(e.Scope.ConversationID) {
				continue // an event of a conversation a later batch of the group erased
			}
			pos++
			entry := store.LogEntry{Position: pos, ExecutionID: e.ExecutionID, Event: e.Event}
			if e.Scope != nil {
				entry.Scope = *e.Scope
			}
			l.pending = append(l.pending, entry)
		}
		if len(req.Batch.Erasures) > 0 {
			pos = l.markers(req, pos)
		}
	}
	if len(l.pending) == 0 {
		return nil
	}
	log := tx.Bucket(bucketStreamLog)
	log.FillPercent = 0.9 // appended at the right edge only
	w := &l.blocks
	put := func(first int64, n int) error {
		value := w.finish(n)
		key := binary.BigEndian.AppendUint64(keys.carve(8), uint64(first))
		if err := log.Put(key, append(keys.carve(len(value)), value...)); err != nil {
			return fmt.Errorf("put stream log block %d: %w", first, err)
		}
		return nil
	}
	first, n := int64(0), 0
	for i := range l.pending {
		if n > 0 && (n == logBlockEntries || len(w.buf) >= maxLogBlockBytes) {
			if err := put(first, n); err != nil {
				return err
			}
			n = 0
		}
		if n == 0 {
			w.start(now.UnixMilli())
			first = l.pending[i].Position
		}
		w.add(&l.pending[i])
		n++
	}
	if err := put(first, n); err != nil {
		return err
	}
	l.folding = len(l.waiting)+len(l.pending) >= l.foldAt
	if l.folding {
		return l.fold(tx, keys)
	}
	return nil
}

// committed makes the transaction's entries the log's and tells the observer, which must not
// keep the slice (it is reused by the next commit).
func (l *streamLog) committed() {
	if len(l.pending) == 0 {
		return
	}
	last := l.pending[len(l.pending)-1].Position
	l.last.Store(last)
	if l.folding {
		clear(l.waiting)
		l.waiting, l.indexed = l.waiting[:0], last
	} else {
		l.dropErased()
		for i := range l.pending {
			l.wait(l.pending[i].Scope.ConversationID, l.pending[i].Position)
		}
	}
	l.mu.Lock()
	observe := l.observe
	l.mu.Unlock()
	if observe != nil {
		observe(l.pending)
	}
	clear(l.pending) // drop the references to the events' bytes until the next commit
	l.pending = l.pending[:0]
}

// StreamLogID is the log's identity (store.StreamLog).
func (s *Store) StreamLogID() string { return s.log.id }

// ObserveLog sets the observer of committed entries (store.StreamLog).
func (s *Store) ObserveLog(fn func([]store.LogEntry)) {
	s.log.mu.Lock()
	s.log.observe = fn
	s.log.mu.Unlock()
}

// StreamLogBounds are the log's ends (store.StreamLog).
func (s *Store) StreamLogBounds() (store.LogBounds, error) {
	return store.LogBounds{Oldest: s.log.oldest.Load(), Last: s.log.last.Load()}, nil
}
