package bolt

import (
	"bytes"
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
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The stream log (store.StreamLog; docs/storage.md, "The stream log"). Its buckets are apart
// from the format's own (layout.go) and are added to a file of any format on open, so a file
// written before them gains them without a migration: its log begins with the first event
// committed after the upgrade.
//
// Positions are numbered by the commit goroutine, the file's only writer, inside the
// transaction that writes the events, so position order is commit order. The log's key is the
// big-endian position: every entry lands at the right edge of its tree, beside the other
// time-ordered keys of the commit (a few pages per commit, however many events). The
// conversation index is one key per event under its conversation: the events of one
// conversation in one commit share a leaf, so a commit touches one leaf per conversation it
// wrote to, not one per event.
var (
	bucketStreamLog            = []byte("stream_log")             // uint64 BE position → log entry (below)
	bucketStreamByConversation = []byte("stream_by_conversation") // conversation id + 0x00 + uint64 BE position → empty

	metaStreamLogID  = []byte("stream_log_id") // 32 lowercase hex digits, random, made once
	metaStreamOldest = []byte("stream_oldest") // decimal: the first position kept (absent: 1)
	streamLogBuckets = [][]byte{bucketStreamLog, bucketStreamByConversation}
)

// A log entry's value: the commit time (uvarint Unix milliseconds, for trimming), the event's
// sequence (uvarint), then five length-prefixed strings (uvarint length): execution id, event
// type, tenant, conversation id, provider id. The type is kept beside the event's so that a
// filter on types reads no event value.
func appendLogEntry(dst []byte, ms int64, e *store.StoredEvent) []byte {
	dst = binary.AppendUvarint(dst, uint64(ms))
	dst = binary.AppendUvarint(dst, uint64(e.Event.Sequence))
	var scope store.StreamScope
	if e.Scope != nil {
		scope = *e.Scope
	}
	for _, s := range [...]string{e.ExecutionID, string(e.Event.Type), scope.Tenant, scope.ConversationID, scope.ProviderID} {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	return dst
}

func logEntryLen(e *store.StoredEvent) int {
	n := 2*binary.MaxVarintLen64 + 5*2 + len(e.ExecutionID) + len(e.Event.Type)
	if e.Scope != nil {
		n += len(e.Scope.Tenant) + len(e.Scope.ConversationID) + len(e.Scope.ProviderID)
	}
	return n
}

// logEntryHead is a decoded log entry without its event's JSON.
type logEntryHead struct {
	ms       int64
	sequence int64
	execID   []byte
	typ      []byte
	scope    [3][]byte // tenant, conversation, provider
}

func decodeLogEntry(pos int64, v []byte) (logEntryHead, error) {
	var h logEntryHead
	bad := func() (logEntryHead, error) {
		return logEntryHead{}, fmt.Errorf("%w: stream log entry %d is not readable", store.ErrUndecodable, pos)
	}
	ms, n := binary.Uvarint(v)
	if n <= 0 {
		return bad()
	}
	v = v[n:]
	seq, n := binary.Uvarint(v)
	if n <= 0 || seq == 0 {
		return bad()
	}
	v = v[n:]
	h.ms, h.sequence = int64(ms), int64(seq)
	fields := [5]*[]byte{&h.execID, &h.typ, &h.scope[0], &h.scope[1], &h.scope[2]}
	for _, f := range fields {
		l, n := binary.Uvarint(v)
		if n <= 0 || uint64(len(v)-n) < l {
			return bad()
		}
		*f = v[n : n+int(l)]
		v = v[n+int(l):]
	}
	return h, nil
}

func positionKey(pos int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(pos)) }

func conversationLogKey(dst []byte, conversationID string, pos int64) []byte {
	dst = append(dst, conversationID...)
	dst = append(dst, 0)
	return binary.BigEndian.AppendUint64(dst, uint64(pos))
}

// streamLog is the store's side of the log: the identity, the ends, the numbering of the
// transaction in progress and the observer.
type streamLog struct {
	id     string
	last   atomic.Int64 // the last committed position
	oldest atomic.Int64 // the first position kept

	// Owned by the commit goroutine: the entries of the transaction in progress.
	pending []store.LogEntry

	mu      sync.Mutex
	observe func([]store.LogEntry)
}

// openStreamLog adds the log's buckets to the file if it lacks them, makes its identity once
// and reads its ends.
func openStreamLog(db *bbolt.DB) (*streamLog, error) {
	l := &streamLog{}
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
		if k, _ := tx.Bucket(bucketStreamLog).Cursor().Last(); len(k) == 8 {
			last = max(last, int64(binary.BigEndian.Uint64(k)))
		}
		l.last.Store(last)
		return nil
	})
	return l, err
}

func readOldest(meta *bbolt.Bucket) (int64, error) {
	raw := meta.Get(metaStreamOldest)
	if raw == nil {
		return 1, nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%w: the stream log's oldest position %q", store.ErrUndecodable, raw)
	}
	return n, nil
}

// write numbers the group's events after the last committed position and puts their entries,
// inside the group's transaction. The numbering is undone (discard) if the transaction fails.
func (l *streamLog) write(tx *bbolt.Tx, group []*store.Request, keys *keyArena, now time.Time) error {
	log := tx.Bucket(bucketStreamLog)
	log.FillPercent = 0.9 // appended at the right edge only
	byConv := tx.Bucket(bucketStreamByConversation)
	ms := now.UnixMilli()
	pos := l.last.Load()
	l.pending = l.pending[:0]
	for _, req := range group {
		for i := range req.Batch.Events {
			e := &req.Batch.Events[i]
			pos++
			key := binary.BigEndian.AppendUint64(keys.carve(8), uint64(pos))
			if err := log.Put(key, appendLogEntry(keys.carve(logEntryLen(e)), ms, e)); err != nil {
				return fmt.Errorf("put stream log entry %d: %w", pos, err)
			}
			entry := store.LogEntry{Position: pos, ExecutionID: e.ExecutionID, Event: e.Event}
			if e.Scope != nil {
				entry.Scope = *e.Scope
			}
			if c := entry.Scope.ConversationID; c != "" {
				if err := byConv.Put(conversationLogKey(keys.carve(len(c)+9), c, pos), nil); err != nil {
					return fmt.Errorf("index stream log entry %d: %w", pos, err)
				}
			}
			l.pending = append(l.pending, entry)
		}
	}
	return nil
}

// committed makes the transaction's entries the log's and tells the observer.
func (l *streamLog) committed() {
	if len(l.pending) == 0 {
		return
	}
	l.last.Store(l.pending[len(l.pending)-1].Position)
	l.mu.Lock()
	observe := l.observe
	l.mu.Unlock()
	if observe != nil {
		observe(l.pending)
		l.pending = nil // the observer may keep the slice
	}
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

// ReadLog reads committed entries in position order (store.StreamLog).
func (s *Store) ReadLog(q store.LogQuery) (store.LogPage, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = store.DefaultLogPage
	}
	scan := q.Scan
	if scan <= 0 {
		scan = 16 * limit
	}
	page := store.LogPage{Reached: q.After}
	err := s.db.View(func(tx *bbolt.Tx) error {
		oldest, err := readOldest(tx.Bucket(bucketMeta))
		if err != nil {
			return err
		}
		if q.After < oldest-1 {
			return fmt.Errorf("%w (after %d; the oldest kept is %d)", store.ErrCursorExpired, q.After, oldest)
		}
		log := tx.Bucket(bucketStreamLog)
		events := tx.Bucket(bucketEvents)
		var eventKey []byte
		// visit examines the entry at pos; false stops the read.
		visit := func(pos int64, v []byte) (bool, error) {
			h, err := decodeLogEntry(pos, v)
			if err != nil {
				return false, err
			}
			page.Reached = pos
			if !q.AnyTenant && string(h.scope[0]) != q.Tenant {
				return true, nil
			}
			entry := store.LogEntry{Position: pos, ExecutionID: string(h.execID), Scope: store.StreamScope{
				Tenant: string(h.scope[0]), ConversationID: string(h.scope[1]), ProviderID: string(h.scope[2])}}
			entry.Event.Sequence = h.sequence
			entry.Event.Type = api.StandardEventType(h.typ)
			if q.Match != nil && !q.Match(&entry) {
				return true, nil
			}
			eventKey = append(append(eventKey[:0], h.execID...), 0, 0, 0, 0, 0, 0, 0, 0)
			binary.BigEndian.PutUint64(eventKey[len(h.execID):], uint64(h.sequence))
			raw := events.Get(eventKey)
			if raw == nil {
				return true, nil // its execution was deleted
			}
			ev, err := decodeEventValue(h.sequence, raw)
			if err != nil {
				return false, err
			}
			ev.JSON = bytes.Clone(ev.JSON) // bbolt's bytes live only as long as the transaction
			entry.Event = ev
			page.Entries = append(page.Entries, entry)
			return len(page.Entries) < limit, nil
		}
		scanned := 0
		if q.ConversationID != "" {
			prefix := append([]byte(q.ConversationID), 0)
			c := tx.Bucket(bucketStreamByConversation).Cursor()
			for k, _ := c.Seek(conversationLogKey(nil, q.ConversationID, q.After+1)); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
				if len(k) != len(prefix)+8 {
					continue // another conversation's id that starts with this one and a 0 byte
				}
				pos := int64(binary.BigEndian.Uint64(k[len(prefix):]))
				v := log.Get(k[len(prefix):])
				if v == nil {
					continue // trimmed while its index key stayed (never written so; tolerated)
				}
				more, err := visit(pos, v)
				if err != nil {
					return err
				}
				if scanned++; !more || scanned >= scan {
					return nil
				}
			}
		} else {
			c := log.Cursor()
			for k, v := c.Seek(positionKey(q.After + 1)); k != nil; k, v = c.Next() {
				more, err := visit(int64(binary.BigEndian.Uint64(k)), v)
				if err != nil {
					return err
				}
				if scanned++; !more || scanned >= scan {
					return nil
				}
			}
		}
		// The end of what this transaction sees: every position up to the log's last one was
		// examined (those of other conversations included).
		if k, _ := log.Cursor().Last(); len(k) == 8 {
			page.Reached = max(page.Reached, int64(binary.BigEndian.Uint64(k)))
		}
		return nil
	})
	if err != nil {
		return store.LogPage{}, err
	}
	return page, nil
}

// trimLogBatch bounds the entries one trimming transaction removes, so that it holds the
// file's single writer (and so the commit goroutine) only briefly.
const trimLogBatch = 4096

// TrimLog removes the entries committed before the given time (store.StreamLog), in short
// transactions of their own beside the group commits.
func (s *Store) TrimLog(before time.Time) (store.LogBounds, error) {
	cutoff := before.UnixMilli()
	for {
		removed, done := 0, false
		err := s.db.Update(func(tx *bbolt.Tx) error {
			log := tx.Bucket(bucketStreamLog)
			byConv := tx.Bucket(bucketStreamByConversation)
			c := log.Cursor()
			next := int64(0)
			for k, v := c.First(); ; k, v = c.First() {
				if k == nil {
					done = true
					next = s.log.last.Load() + 1
					break
				}
				pos := int64(binary.BigEndian.Uint64(k))
				h, err := decodeLogEntry(pos, v)
				if err != nil {
					return err
				}
				if h.ms >= cutoff || removed == trimLogBatch {
					done = h.ms >= cutoff
					next = pos
					break
				}
				if len(h.scope[1]) > 0 {
					if err := byConv.Delete(conversationLogKey(nil, string(h.scope[1]), pos)); err != nil {
						return err
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
