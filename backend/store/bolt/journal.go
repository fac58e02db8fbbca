package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	bbolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend/store"
)

// The index journal keeps the two writes of a new execution whose keys are not time-ordered —
// its idempotency record (under its conversation and the client's key) and its
// executions_by_conversation entry — off the B+trees they belong to until enough of them are
// waiting, then folds them in all at once, sorted. Written one by one, each lands on a random
// leaf of a tree that grows with the store: one page rewritten per execution per tree, the
// largest part of a commit's page writes (docs/performance-log.md). In the journal they are
// appended under increasing numbers, beside the time-ordered keys of the same commit; a fold
// puts hundreds of them on each leaf it touches (the executions of one conversation, and the
// keys of one conversation, are neighbours there).
//
// The journal is durable (a bucket, written in the transaction that writes the execution) and
// mirrored in memory, where reads look first: Idempotency, the conflict check of a new
// idempotency record (exactly once, also across restarts: Open reloads the mirror), and a
// conversation's listing, which merges its journal entries into the bucket's. Only the commit
// goroutine changes the journal, and it updates the mirror after its transaction committed
// and before the batches' Done calls; a reader looks at the mirror before it opens its read
// transaction, so whatever the mirror no longer holds is already in the buckets that
// transaction sees.

// DefaultIndexJournalLimit is Options.IndexJournalLimit's default: entries waiting before a
// fold (two per new execution with an idempotency key). About 1 MB of memory.
const DefaultIndexJournalLimit = 4096

// Journal entry kinds: the bucket the entry is folded into.
const (
	journalIdempotency  = 'i' // → idempotency: key → store.Idempotency JSON
	journalConversation = 'c' // → executions_by_conversation: key → empty
)

// indexJournal is the in-memory mirror of bucketIndexJournal.
type indexJournal struct {
	limit int

	mu      sync.RWMutex
	idem    map[string]store.Idempotency // idempotency bucket key → record
	conv    map[string][]string          // conversation id → its executions_by_conversation keys
	entries int                          // entries in the bucket
	next    uint64                       // number of the next entry
}

func newIndexJournal(limit int) *indexJournal {
	if limit <= 0 {
		limit = DefaultIndexJournalLimit
	}
	return &indexJournal{limit: limit, idem: map[string]store.Idempotency{}, conv: map[string][]string{}}
}

// load fills the mirror from the bucket (Open).
func (j *indexJournal) load(db *bbolt.DB) error {
	return db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketIndexJournal).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			kind, key, value, err := decodeJournalEntry(k, v)
			if err != nil {
				return err
			}
			if err := j.add(kind, key, value); err != nil {
				return fmt.Errorf("index journal entry %x: %w", k, err)
			}
			j.next = binary.BigEndian.Uint64(k) + 1
		}
		return nil
	})
}

// add puts one entry into the mirror (the caller holds mu or owns j alone).
func (j *indexJournal) add(kind byte, key, value []byte) error {
	switch kind {
	case journalIdempotency:
		var rec store.Idempotency
		if err := json.Unmarshal(value, &rec); err != nil {
			return err
		}
		j.idem[string(key)] = rec
	case journalConversation:
		conv, _, _ := bytes.Cut(key, []byte{0})
		j.conv[string(conv)] = append(j.conv[string(conv)], string(key))
	}
	j.entries++
	return nil
}

// idempotency is the record under key if the journal holds it.
func (j *indexJournal) idempotency(key []byte) (store.Idempotency, bool) {
	j.mu.RLock()
	defer j.mu.RUnlock()
	rec, ok := j.idem[string(key)]
	return rec, ok
}

// conversationKeys are the journal's executions_by_conversation keys of conversationID,
// newest first (a copy).
func (j *indexJournal) conversationKeys(conversationID string) [][]byte {
	j.mu.RLock()
	keys := j.conv[conversationID]
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = []byte(k)
	}
	j.mu.RUnlock()
	slices.SortFunc(out, func(a, b []byte) int { return bytes.Compare(b, a) })
	return out
}

func journalEntryLen(key, value []byte) int { return 1 + binary.MaxVarintLen64 + len(key) + len(value) }

func appendJournalEntry(out []byte, kind byte, key, value []byte) []byte {
	out = append(out, kind)
	out = binary.AppendUvarint(out, uint64(len(key)))
	out = append(out, key...)
	return append(out, value...)
}

func decodeJournalEntry(k, v []byte) (kind byte, key, value []byte, err error) {
	if len(k) != 8 || len(v) < 2 || (v[0] != journalIdempotency && v[0] != journalConversation) {
		return 0, nil, nil, fmt.Errorf("index journal entry %x: %w", k, store.ErrUndecodable)
	}
	n, size := binary.Uvarint(v[1:])
	if size <= 0 || uint64(len(v)-1-size) < n {
		return 0, nil, nil, fmt.Errorf("index journal entry %x: %w", k, store.ErrUndecodable)
	}
	rest := v[1+size:]
	return v[0], rest[:n], rest[n:], nil
}

// journalTx is one write transaction's use of the journal: what it added, and whether it
// folded. The mirror takes it over (commit) only once the transaction committed.
type journalTx struct {
	j      *indexJournal
	tx     *bbolt.Tx
	keys   *keyArena // the transaction's, for the entries' values
	idem   map[string]store.Idempotency
	conv   [][2][]byte // kind-less entries: {conversation id, key}
	added  int
	folded bool
}

func (j *indexJournal) begin(tx *bbolt.Tx, keys *keyArena) *journalTx {
	return &journalTx{j: j, tx: tx, keys: keys}
}

// idempotencyTaken reports whether the idempotency bucket key is bound, in this transaction's
// view of the store.
func (jt *journalTx) idempotencyTaken(key []byte) bool {
	if _, ok := jt.idem[string(key)]; ok {
		return true
	}
	if !jt.folded {
		if _, ok := jt.j.idempotency(key); ok {
			return true
		}
	}
	return jt.tx.Bucket(bucketIdempotency).Get(key) != nil
}

func (jt *journalTx) put(kind byte, key, value []byte) error {
	n := jt.j.next + uint64(jt.added)
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], n)
	entry := appendJournalEntry(jt.keys.carve(journalEntryLen(key, value)), kind, key, value)
	if err := jt.tx.Bucket(bucketIndexJournal).Put(k[:], entry); err != nil {
		return err
	}
	jt.added++
	return nil
}

func (jt *journalTx) addIdempotency(key []byte, rec store.Idempotency) error {
	raw, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := jt.put(journalIdempotency, key, raw); err != nil {
		return err
	}
	if jt.idem == nil {
		jt.idem = map[string]store.Idempotency{}
	}
	jt.idem[string(key)] = rec
	return nil
}

func (jt *journalTx) addConversation(conversationID string, key []byte) error {
	if err := jt.put(journalConversation, key, nil); err != nil {
		return err
	}
	jt.conv = append(jt.conv, [2][]byte{[]byte(conversationID), key})
	return nil
}

// pending is the number of entries the journal bucket holds in this transaction.
func (jt *journalTx) pending() int {
	if jt.folded {
		return jt.added
	}
	jt.j.mu.RLock()
	defer jt.j.mu.RUnlock()
	return jt.j.entries + jt.added
}

// fold moves every journal entry into its bucket, in key order, and empties the journal.
func (jt *journalTx) fold() error {
	type entry struct{ key, value []byte }
	var idem, conv []entry
	c := jt.tx.Bucket(bucketIndexJournal).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		kind, key, value, err := decodeJournalEntry(k, v)
		if err != nil {
			return err
		}
		e := entry{bytes.Clone(key), bytes.Clone(value)}
		if kind == journalIdempotency {
			idem = append(idem, e)
		} else {
			conv = append(conv, e)
		}
	}
	for _, part := range []struct {
		bucket  []byte
		entries []entry
	}{{bucketIdempotency, idem}, {bucketExecutionsByConversation, conv}} {
		slices.SortFunc(part.entries, func(a, b entry) int { return bytes.Compare(a.key, b.key) })
		b := jt.tx.Bucket(part.bucket)
		for _, e := range part.entries {
			if err := b.Put(e.key, e.value); err != nil {
				return err
			}
		}
	}
	if err := jt.tx.DeleteBucket(bucketIndexJournal); err != nil {
		return err
	}
	journal, err := jt.tx.CreateBucket(bucketIndexJournal)
	if err != nil {
		return err
	}
	journal.FillPercent = 0.9 // appended to, like the buckets packAppends sets
	// Numbers start over from j.next in the new bucket: nothing else holds them.
	jt.added, jt.idem, jt.conv, jt.folded = 0, nil, nil, true
	return nil
}

// commit makes the mirror what the committed transaction left in the bucket.
func (jt *journalTx) commit() {
	j := jt.j
	j.mu.Lock()
	defer j.mu.Unlock()
	if jt.folded {
		clear(j.idem)
		clear(j.conv)
		j.entries = 0
	}
	for k, rec := range jt.idem {
		j.idem[k] = rec
	}
	for _, e := range jt.conv {
		j.conv[string(e[0])] = append(j.conv[string(e[0])], string(e[1]))
	}
	j.entries += len(jt.idem) + len(jt.conv)
	j.next += uint64(jt.added)
}
