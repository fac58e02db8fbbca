package bolt

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
var (
	bucketStreamLog            = []byte("stream_log")             // uint64 BE first position → a block of entries (below)
	bucketStreamByConversation = []byte("stream_by_conversation") // conversation id + 0x00 + uint64 BE first position → its positions of one fold

	metaStreamLogID   = []byte("stream_log_id")  // 32 lowercase hex digits, random, made once
	metaStreamOldest  = []byte("stream_oldest")  // decimal: the first position kept (absent: 1)
	metaStreamIndexed = []byte("stream_indexed") // decimal: the conversation index holds every position up to this one (absent: 0)
	streamLogBuckets  = [][]byte{bucketStreamLog, bucketStreamByConversation}
)

// logBlockEntries bounds the entries of one block, so that reading one entry never decodes a
// huge value.
const logBlockEntries = 512

// DefaultStreamIndexFold is Options.StreamIndexFold's default: how many entries wait for the
// conversation index before a commit folds them in, the bound of the blocks a conversation's
// read walks past the index.
const DefaultStreamIndexFold = 4096

// A block's value: the commit time (uvarint Unix milliseconds, for trimming), the number of
// entries (2 bytes, big-endian), then the entries. An entry is: which execution (uvarint: 0 for
// one the block has not named yet, followed by its execution id, tenant, conversation id and
// provider id, each a uvarint length and the bytes; k > 0 for the k-th execution the block
// named), its sequence (uvarint), and its type (one byte: its index in api.StandardEventTypes
// plus one, or 0 followed by the type as a length and the bytes). Entry i has position key+i.
// An execution's scope is written once per block and its events cost three or four bytes, so a
// commit's block stays within a page (maxLogBlockBytes): bbolt allocates a buffer of its own
// for every value that overflows a page, at each commit.
const maxLogBlockBytes = 2000

// logBlockWriter encodes blocks, reusing its buffers across blocks and commits.
type logBlockWriter struct {
	buf   []byte
	execs map[string]int // execution id → its number in the block, from 1
}

// start begins a block committed at ms.
func (w *logBlockWriter) start(ms int64) {
	w.buf = binary.AppendUvarint(w.buf[:0], uint64(ms))
	w.buf = append(w.buf, 0, 0) // the count, set by finish
	clear(w.execs)
}

// add appends e to the block.
func (w *logBlockWriter) add(e *store.LogEntry) {
	if k, ok := w.execs[e.ExecutionID]; ok {
		w.buf = binary.AppendUvarint(w.buf, uint64(k))
	} else {
		w.execs[e.ExecutionID] = len(w.execs) + 1
		w.buf = append(w.buf, 0)
		for _, s := range [...]string{e.ExecutionID, e.Scope.Tenant, e.Scope.ConversationID, e.Scope.ProviderID} {
			w.buf = binary.AppendUvarint(w.buf, uint64(len(s)))
			w.buf = append(w.buf, s...)
		}
	}
	w.buf = binary.AppendUvarint(w.buf, uint64(e.Event.Sequence))
	if i := slices.Index(api.StandardEventTypes, e.Event.Type); i >= 0 && i < 255 {
		w.buf = append(w.buf, byte(i+1))
	} else {
		w.buf = append(w.buf, 0)
		w.buf = binary.AppendUvarint(w.buf, uint64(len(e.Event.Type)))
		w.buf = append(w.buf, e.Event.Type...)
	}
}

// finish sets the block's count and returns its value (valid until the next start).
func (w *logBlockWriter) finish(n int) []byte {
	_, k := binary.Uvarint(w.buf) // the count follows the time
	binary.BigEndian.PutUint16(w.buf[k:], uint16(n))
	return w.buf
}

// typeBytes are the event types as bytes, for decoding without an allocation per entry.
var typeBytes = func() [][]byte {
	out := make([][]byte, len(api.StandardEventTypes))
	for i, t := range api.StandardEventTypes {
		out[i] = []byte(t)
	}
	return out
}()

// logEntryHead is a decoded entry without its event's JSON; its byte slices point into the
// block's value.
type logEntryHead struct {
	sequence int64
	execID   []byte
	typ      []byte
	scope    [3][]byte // tenant, conversation, provider
}

// logBlock is a decoded block.
type logBlock struct {
	first   int64 // the position of entries[0]
	ms      int64
	entries []logEntryHead
	execs   [][4][]byte // the executions it names: id, tenant, conversation, provider
}

func (b *logBlock) last() int64 { return b.first + int64(len(b.entries)) - 1 }

// decodeLogBlockHead reads a block's commit time and number of entries.
func decodeLogBlockHead(first int64, v []byte) (ms int64, n int, rest []byte, err error) {
	t, k := binary.Uvarint(v)
	if k <= 0 || len(v) < k+2 {
		return 0, 0, nil, badBlock(first)
	}
	count := int(binary.BigEndian.Uint16(v[k:]))
	if count == 0 || count > logBlockEntries {
		return 0, 0, nil, badBlock(first)
	}
	return int64(t), count, v[k+2:], nil
}

func badBlock(first int64) error {
	return fmt.Errorf("%w: the stream log's block at position %d is not readable", store.ErrUndecodable, first)
}

// decodeLogBlock decodes the block under key first into b (its storage reused).
func decodeLogBlock(first int64, v []byte, b *logBlock) error {
	ms, n, v, err := decodeLogBlockHead(first, v)
	if err != nil {
		return err
	}
	b.first, b.ms, b.entries, b.execs = first, ms, b.entries[:0], b.execs[:0]
	str := func() ([]byte, bool) {
		l, k := binary.Uvarint(v)
		if k <= 0 || uint64(len(v)-k) < l {
			return nil, false
		}
		out := v[k : k+int(l)]
		v = v[k+int(l):]
		return out, true
	}
	for range n {
		var h logEntryHead
		ref, k := binary.Uvarint(v)
		if k <= 0 || ref > uint64(len(b.execs)) {
			return badBlock(first)
		}
		v = v[k:]
		if ref == 0 {
			var x [4][]byte
			for i := range x {
				var ok bool
				if x[i], ok = str(); !ok {
					return badBlock(first)
				}
			}
			b.execs = append(b.execs, x)
			ref = uint64(len(b.execs))
		}
		x := &b.execs[ref-1]
		h.execID, h.scope = x[0], [3][]byte{x[1], x[2], x[3]}
		seq, k := binary.Uvarint(v)
		if k <= 0 || seq == 0 || len(v) == k {
			return badBlock(first)
		}
		h.sequence = int64(seq)
		t := v[k]
		v = v[k+1:]
		switch {
		case t == 0:
			typ, ok := str()
			if !ok {
				return badBlock(first)
			}
			h.typ = typ
		case int(t) <= len(api.StandardEventTypes):
			h.typ = typeBytes[t-1]
		default:
			return badBlock(first)
		}
		b.entries = append(b.entries, h)
	}
	return nil
}

func positionKey(pos int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(pos)) }

func conversationLogKey(dst []byte, conversationID string, pos int64) []byte {
	dst = append(dst, conversationID...)
	dst = append(dst, 0)
	return binary.BigEndian.AppendUint64(dst, uint64(pos))
}

// blockAt positions c on the block that holds pos (the last block starting at or before it)
// and returns it; nil when there is none.
func blockAt(c *bbolt.Cursor, pos int64) (k, v []byte) {
	k, v = c.Seek(positionKey(pos))
	if k != nil && int64(binary.BigEndian.Uint64(k)) == pos {
		return k, v
	}
	if k == nil {
		return c.Last()
	}
	if pk, pv := c.Prev(); pk != nil {
		return pk, pv
	}
	return c.First()
}

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
			pos++
			entry := store.LogEntry{Position: pos, ExecutionID: e.ExecutionID, Event: e.Event}
			if e.Scope != nil {
				entry.Scope = *e.Scope
			}
			l.pending = append(l.pending, entry)
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

// fold writes the conversation index for every position waiting and this transaction's, one
// key per conversation, and moves the mark to the transaction's last position. Positions
// trimmed meanwhile (older than the oldest kept) are left out.
func (l *streamLog) fold(tx *bbolt.Tx, keys *keyArena) error {
	meta := tx.Bucket(bucketMeta)
	oldest, err := readOldest(meta)
	if err != nil {
		return err
	}
	all := append(make([]waitingPosition, 0, len(l.waiting)+len(l.pending)), l.waiting...) // a failed transaction keeps l.waiting as it was
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

// logReader is one ReadLog: the query, the page it fills and the decoded block it reads from.
type logReader struct {
	q        store.LogQuery
	limit    int
	page     store.LogPage
	log      *bbolt.Cursor
	events   *bbolt.Bucket
	block    logBlock
	eventKey []byte
}

// ReadLog reads committed entries in position order (store.StreamLog).
func (s *Store) ReadLog(q store.LogQuery) (store.LogPage, error) {
	r := &logReader{q: q, limit: q.Limit, page: store.LogPage{Reached: q.After}}
	if r.limit <= 0 {
		r.limit = store.DefaultLogPage
	}
	scan := q.Scan
	if scan <= 0 {
		scan = 16 * r.limit
	}
	err := s.db.View(func(tx *bbolt.Tx) error {
		oldest, err := readOldest(tx.Bucket(bucketMeta))
		if err != nil {
			return err
		}
		if q.After < oldest-1 {
			return fmt.Errorf("%w (after %d; the oldest kept is %d)", store.ErrCursorExpired, q.After, oldest)
		}
		r.log = tx.Bucket(bucketStreamLog).Cursor()
		r.events = tx.Bucket(bucketEvents)
		scanned := 0
		if q.ConversationID != "" {
			done, err := r.readConversation(tx, &scanned, scan)
			if done || err != nil {
				return err
			}
			// Past the index's mark, the blocks themselves.
			indexed, err := readPosition(tx.Bucket(bucketMeta), metaStreamIndexed, 0)
			if err != nil {
				return err
			}
			from := max(q.After, indexed)
			for k, v := blockAt(r.log, from+1); k != nil; k, v = r.log.Next() {
				if err := decodeLogBlock(int64(binary.BigEndian.Uint64(k)), v, &r.block); err != nil {
					return err
				}
				for i := range r.block.entries {
					pos := r.block.first + int64(i)
					if pos <= from {
						continue
					}
					r.page.Reached = pos
					// The entries of other conversations are not counted against the scan
					// bound: there are at most StreamIndexFold of them, and counting them
					// would return empty pages of a conversation that has more to come.
					if string(r.block.entries[i].scope[1]) == q.ConversationID {
						more, err := r.visit(pos, &r.block.entries[i])
						if err != nil {
							return err
						}
						if scanned++; !more || scanned >= scan {
							return nil
						}
					}
				}
			}
		} else {
			for k, v := blockAt(r.log, q.After+1); k != nil; k, v = r.log.Next() {
				if err := decodeLogBlock(int64(binary.BigEndian.Uint64(k)), v, &r.block); err != nil {
					return err
				}
				for i := range r.block.entries {
					pos := r.block.first + int64(i)
					if pos <= q.After {
						continue
					}
					more, err := r.visit(pos, &r.block.entries[i])
					if err != nil {
						return err
					}
					if scanned++; !more || scanned >= scan {
						return nil
					}
				}
			}
		}
		// The end of what this transaction sees: every position up to the log's last one was
		// examined (those of other conversations included).
		if k, v := r.log.Last(); len(k) == 8 {
			first := int64(binary.BigEndian.Uint64(k))
			if _, n, _, err := decodeLogBlockHead(first, v); err == nil {
				r.page.Reached = max(r.page.Reached, first+int64(n)-1)
			}
		}
		return nil
	})
	if err != nil {
		return store.LogPage{}, err
	}
	return r.page, nil
}

// readConversation walks the conversation's index keys after the cursor (the positions up to
// the index's mark); done is true when the page filled or the scan bound was reached (Reached
// is then where it stopped).
func (r *logReader) readConversation(tx *bbolt.Tx, scanned *int, scan int) (done bool, err error) {
	prefix := append([]byte(r.q.ConversationID), 0)
	c := tx.Bucket(bucketStreamByConversation).Cursor()
	// The index block that may hold the first position after the cursor starts at or before it.
	k, v := c.Seek(conversationLogKey(nil, r.q.ConversationID, r.q.After+1))
	if pk, pv := c.Prev(); pk != nil && bytes.HasPrefix(pk, prefix) && len(pk) == len(prefix)+8 {
		k, v = pk, pv
	} else {
		k, v = c.Seek(conversationLogKey(nil, r.q.ConversationID, r.q.After+1))
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(k) != len(prefix)+8 {
			continue // another conversation's id that starts with this one and a 0 byte
		}
		base := int64(binary.BigEndian.Uint64(k[len(prefix):]))
		n, m := binary.Uvarint(v)
		if m <= 0 {
			return false, badBlock(base)
		}
		v = v[m:]
		for range n {
			d, m := binary.Uvarint(v)
			if m <= 0 {
				return false, badBlock(base)
			}
			v = v[m:]
			pos := base + int64(d)
			if pos <= r.q.After {
				continue
			}
			h, err := r.entry(pos)
			if err != nil {
				return false, err
			}
			if h == nil {
				continue // trimmed while its index key stayed (never written so; tolerated)
			}
			more, err := r.visit(pos, h)
			if err != nil {
				return false, err
			}
			if *scanned++; !more || *scanned >= scan {
				return true, nil
			}
		}
	}
	return false, nil
}

// entry is the log's entry at pos, from the decoded block when it holds it; nil when gone.
func (r *logReader) entry(pos int64) (*logEntryHead, error) {
	if len(r.block.entries) == 0 || pos < r.block.first || pos > r.block.last() {
		k, v := blockAt(r.log, pos)
		if k == nil {
			return nil, nil
		}
		if err := decodeLogBlock(int64(binary.BigEndian.Uint64(k)), v, &r.block); err != nil {
			return nil, err
		}
		if pos < r.block.first || pos > r.block.last() {
			r.block.entries = r.block.entries[:0]
			return nil, nil
		}
	}
	return &r.block.entries[pos-r.block.first], nil
}

// visit examines the entry at pos: filters, then the event joined; false stops the read.
func (r *logReader) visit(pos int64, h *logEntryHead) (bool, error) {
	r.page.Reached = pos
	if !r.q.AnyTenant && string(h.scope[0]) != r.q.Tenant {
		return true, nil
	}
	entry := store.LogEntry{Position: pos, ExecutionID: string(h.execID), Scope: store.StreamScope{
		Tenant: string(h.scope[0]), ConversationID: string(h.scope[1]), ProviderID: string(h.scope[2])}}
	entry.Event.Sequence = h.sequence
	entry.Event.Type = api.StandardEventType(h.typ)
	if r.q.Match != nil && !r.q.Match(&entry) {
		return true, nil
	}
	r.eventKey = append(append(r.eventKey[:0], h.execID...), 0, 0, 0, 0, 0, 0, 0, 0)
	binary.BigEndian.PutUint64(r.eventKey[len(h.execID):], uint64(h.sequence))
	raw := r.events.Get(r.eventKey)
	if raw == nil {
		return true, nil // its execution was deleted
	}
	ev, err := decodeEventValue(h.sequence, raw)
	if err != nil {
		return false, err
	}
	ev.JSON = bytes.Clone(ev.JSON) // bbolt's bytes live only as long as the transaction
	entry.Event = ev
	r.page.Entries = append(r.page.Entries, entry)
	return len(r.page.Entries) < r.limit, nil
}

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
