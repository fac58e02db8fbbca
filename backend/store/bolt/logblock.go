package bolt

import (
	"encoding/binary"
	"fmt"
	"slices"

	bbolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The stream log's binary format (the log itself is in streamlog.go): its blocks, encoded by the
// commit goroutine and decoded by the reader, the trimmer and the open, and the keys of its two
// buckets.

// logBlockEntries bounds the entries of one block, so that reading one entry never decodes a
// huge value.
const logBlockEntries = 512

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
	execs map[string]int // execution id (or a hole's or marker's scope) → its number in the block, from 1
}

// start begins a block committed at ms.
func (w *logBlockWriter) start(ms int64) {
	w.buf = binary.AppendUvarint(w.buf[:0], uint64(ms))
	w.buf = append(w.buf, 0, 0) // the count, set by finish
	clear(w.execs)
}

// add appends e to the block.
func (w *logBlockWriter) add(e *store.LogEntry) {
	key, seq := e.ExecutionID, e.Event.Sequence
	if key == "" {
		// A hole or a marker (logerase.go): named by its scope, with a sequence of 1 (0 is
		// not a sequence a block holds).
		key, seq = "\x00"+e.Scope.Tenant+"\x00"+e.Scope.ConversationID, 1
	}
	if k, ok := w.execs[key]; ok {
		w.buf = binary.AppendUvarint(w.buf, uint64(k))
	} else {
		w.execs[key] = len(w.execs) + 1
		w.buf = append(w.buf, 0)
		for _, s := range [...]string{e.ExecutionID, e.Scope.Tenant, e.Scope.ConversationID, e.Scope.ProviderID} {
			w.buf = binary.AppendUvarint(w.buf, uint64(len(s)))
			w.buf = append(w.buf, s...)
		}
	}
	w.buf = binary.AppendUvarint(w.buf, uint64(seq))
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
