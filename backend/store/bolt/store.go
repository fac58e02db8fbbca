// Package bolt is the embedded store: one bbolt file in a directory, for one process. It
// implements store.Store (not store.Cluster: a bbolt file cannot be shared by several nodes).
package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// FileName is the bbolt file created inside the store's directory.
const FileName = "harness.db"

// Options tune Open.
type Options struct {
	// Observe, when set, is told how long each write transaction took (metrics).
	Observe func(time.Duration)
	// IndexJournalLimit is how many index journal entries wait before they are folded into
	// their buckets (journal.go); 0: DefaultIndexJournalLimit.
	IndexJournalLimit int
}

// Store is the file-backed store. Writes go through store.Committer's group commit: everything
// queued while a commit (and its fsync) is in flight goes into the next bbolt transaction
// (bbolt's own db.Batch would wait up to MaxBatchDelay for a lone writer).
type Store struct {
	db        *bbolt.DB
	dir       string
	committer *store.Committer
	journal   *indexJournal // idempotency and by-conversation entries not yet folded
	// outbox makes webhook notifications from committed events (outbox.go); nil: none. Set
	// before the first commit, read by the commit goroutine under mu.
	mu     sync.Mutex
	outbox store.OutboxPlanner
	// writeFault, when set (tests, see SetWriteFault), fails every write transaction with its
	// error, inside the commit goroutine, exactly where a full disk fails one.
	writeFault atomic.Pointer[error]

	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*Store)(nil)

// Open opens (or creates) the store file in dir, creating dir if needed. A file that exists
// but is not a usable store fails with an error matching store.ErrDamaged; a file another
// process holds fails after a short wait with an error matching store.ErrLocked.
func Open(dir string, opts Options) (*Store, error) {
	if dir == "" {
		return nil, errors.New("data directory is required")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	db, err := openBoltFile(filepath.Join(dir, FileName))
	if err != nil {
		return nil, err
	}
	// (openBoltFile migrated a file of an older format.) An index whose buckets are gone is
	// built again from the records.
	if _, err := buildListingIndex(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("build the listing index: %w", err)
	}
	journal := newIndexJournal(opts.IndexJournalLimit)
	if err := journal.load(db); err != nil {
		db.Close()
		return nil, damaged(filepath.Join(dir, FileName), "%v", err)
	}
	s := &Store{db: db, dir: dir, journal: journal}
	s.committer = store.NewCommitter(s.applyGroup, store.CommitterOptions{Observe: opts.Observe})
	return s, nil
}

// Dir is the directory the store file is in.
func (s *Store) Dir() string { return s.dir }

// Commit applies b durably and waits for it (conversations, recovery, retention).
func (s *Store) Commit(b *store.Batch) error { return s.committer.Commit(b) }

// Submit queues req for the next group commit (see store.Committer).
func (s *Store) Submit(req *store.Request) error { return s.committer.Submit(req) }

// SetOutboxPlanner makes every later commit write outbox rows for the events p wants.
func (s *Store) SetOutboxPlanner(p store.OutboxPlanner) {
	s.mu.Lock()
	s.outbox = p
	s.mu.Unlock()
}

// SetWriteFault makes every write transaction fail with err from now on (nil: writes succeed
// again), inside the commit goroutine, where a full disk fails one. Reads work. For tests of
// what the runtime does when the disk refuses its changes.
func (s *Store) SetWriteFault(err error) {
	if err == nil {
		s.writeFault.Store(nil)
		return
	}
	s.writeFault.Store(&err)
}

// applyGroup writes the batches of group in one bbolt transaction (store.Committer's apply).
func (s *Store) applyGroup(group []*store.Request) error {
	s.mu.Lock()
	planner := s.outbox
	s.mu.Unlock()
	notify := false // a new outbox row was written: wake the sender once committed
	var latest latestRecords
	if planner == nil {
		// With webhooks, the outbox planner reads the record each event was appended under
		// (snapshotOf), so every version is written as it comes.
		latest = latestExecutionRecords(group)
	}
	var jt *journalTx
	err := s.db.Update(func(tx *bbolt.Tx) error {
		if p := s.writeFault.Load(); p != nil {
			return *p
		}
		packAppends(tx)
		jt = s.journal.begin(tx)
		// A full journal is folded before it grows further.
		if jt.pending() >= s.journal.limit {
			if err := jt.fold(); err != nil {
				return fmt.Errorf("fold the index journal: %w", err)
			}
		}
		keys := &keyArena{}
		for _, req := range group {
			if err := applyBatch(tx, req.Batch, latest, keys, jt); err != nil {
				return err
			}
			wrote, err := applyOutbox(tx, req.Batch, planner, time.Now())
			if err != nil {
				return err
			}
			notify = notify || wrote
		}
		return nil
	})
	if err == nil {
		jt.commit()
	}
	if err == nil && notify && planner != nil {
		planner.Committed()
	}
	return err
}

// packAppends lets the buckets keyed by execution id fill their pages before splitting them.
// Execution ids are time-ordered (newExecutionID), so their keys arrive at the right edge of
// the tree, where bbolt's default split at half a page would leave every page half empty.
func packAppends(tx *bbolt.Tx) {
	for _, name := range [][]byte{bucketExecutions, bucketEvents, bucketArtifacts, bucketExecutionsByTime, bucketIndexJournal} {
		tx.Bucket(name).FillPercent = 0.9
	}
}

// latestRecords maps each execution id written by a group of batches to its last version in
// the group; nil writes every version.
type latestRecords map[string]*store.Execution

// latestExecutionRecords finds the last version of each execution record in group. An
// execution's record is rewritten at each change of state (queued, running, succeeded), and a
// short execution's changes often share one commit: only the last version is then written, with
// its index entries, as the transaction's result is the same (a put replaces, and a deletion in
// between removes what the later put writes anew). That saves bbolt puts, page touches and JSON
// encodings per execution. Nil when the group writes no execution more than once.
func latestExecutionRecords(group []*store.Request) latestRecords {
	var latest latestRecords
	seen := 0
	for _, req := range group {
		for i := range req.Batch.Executions {
			rec := &req.Batch.Executions[i]
			if latest == nil {
				latest = make(latestRecords)
			}
			latest[rec.Execution.ID] = rec
			seen++
		}
	}
	if len(latest) == seen {
		return nil // nothing is superseded
	}
	return latest
}

// superseded reports whether a later version of rec is written by the same transaction.
func (l latestRecords) superseded(rec *store.Execution) bool {
	return l != nil && l[rec.Execution.ID] != rec
}

func applyBatch(tx *bbolt.Tx, b *store.Batch, latest latestRecords, keys *keyArena, jt *journalTx) error {
	for _, c := range b.Conversations {
		if err := putJSON(tx.Bucket(bucketConversations), []byte(c.ID), c); err != nil {
			return fmt.Errorf("put conversation %s: %w", c.ID, err)
		}
	}
	for i := range b.Executions {
		rec := &b.Executions[i]
		if latest.superseded(rec) {
			continue
		}
		if err := putJSON(tx.Bucket(bucketExecutions), []byte(rec.Execution.ID), rec); err != nil {
			return fmt.Errorf("put execution %s: %w", rec.Execution.ID, err)
		}
		if err := indexExecution(tx, *rec, jt); err != nil {
			return fmt.Errorf("index execution %s: %w", rec.Execution.ID, err)
		}
	}
	events := tx.Bucket(bucketEvents)
	for _, e := range b.Events {
		if len(e.Event.Type) == 0 || len(e.Event.Type) > 255 {
			return fmt.Errorf("event %s:%d has no type", e.ExecutionID, e.Event.Sequence)
		}
		value := appendEventValue(keys.carve(eventValueLen(e.Event)), e.Event)
		if err := events.Put(keys.numbered(e.ExecutionID, uint64(e.Event.Sequence)), value); err != nil {
			return fmt.Errorf("put event %s:%d: %w", e.ExecutionID, e.Event.Sequence, err)
		}
	}
	for _, a := range b.Artifacts {
		key := numberedKey(a.Artifact.ExecutionID, uint64(a.Index))
		if err := putJSON(tx.Bucket(bucketArtifacts), key, a.Artifact); err != nil {
			return fmt.Errorf("put artifact %s: %w", a.Artifact.ID, err)
		}
	}
	for _, a := range b.Actions {
		if err := putJSON(tx.Bucket(bucketActions), []byte(a.Request.ID), a); err != nil {
			return fmt.Errorf("put action %s: %w", a.Request.ID, err)
		}
	}
	for _, r := range b.Idempotency {
		key := idempotencyKey(r.Tenant, r.ConversationID, r.Key)
		if jt.idempotencyTaken(key) {
			// The key is taken (within this transaction too): the whole transaction is undone,
			// and the Committer retries its other batches alone.
			return fmt.Errorf("idempotency key %q of conversation %s: %w", r.Key, r.ConversationID, store.ErrConflict)
		}
		if err := jt.addIdempotency(key, r); err != nil {
			return fmt.Errorf("put idempotency record: %w", err)
		}
	}
	for _, c := range b.Checkpoints {
		if err := tx.Bucket(bucketCheckpoints).Put([]byte(c.ExecutionID), c.Data); err != nil {
			return fmt.Errorf("put checkpoint of %s: %w", c.ExecutionID, err)
		}
	}
	for _, st := range b.ProviderState {
		if err := tx.Bucket(bucketProviderState).Put([]byte(st.Key), st.Value); err != nil {
			return fmt.Errorf("put provider state: %w", err)
		}
	}
	if len(b.Deletions) > 0 && jt.pending() > 0 {
		// Deletions find every index entry in its bucket (retention: rare, and in bulk).
		if err := jt.fold(); err != nil {
			return fmt.Errorf("fold the index journal: %w", err)
		}
	}
	for _, rec := range b.Deletions {
		if err := deleteExecution(tx, rec); err != nil {
			return fmt.Errorf("delete execution %s: %w", rec.Execution.ID, err)
		}
	}
	return nil
}

func deleteExecution(tx *bbolt.Tx, rec store.Execution) error {
	id := rec.Execution.ID
	for _, name := range [][]byte{bucketEvents, bucketArtifacts} {
		if err := deletePrefix(tx.Bucket(name), []byte(id)); err != nil {
			return err
		}
	}
	if err := tx.Bucket(bucketCheckpoints).Delete([]byte(id)); err != nil {
		return err
	}
	if err := deleteOutbox(tx, id); err != nil {
		return err
	}
	actions := tx.Bucket(bucketActions)
	for _, actionID := range rec.ActionIDs {
		if err := actions.Delete([]byte(actionID)); err != nil {
			return err
		}
	}
	if rec.IdempotencyKey != nil {
		key := idempotencyKey(rec.Tenant, rec.Execution.ConversationID, *rec.IdempotencyKey)
		idem := tx.Bucket(bucketIdempotency)
		// Only if it still points here: never delete someone else's binding.
		var r store.Idempotency
		if raw := idem.Get(key); raw != nil && json.Unmarshal(raw, &r) == nil && r.ExecutionID == id {
			if err := idem.Delete(key); err != nil {
				return err
			}
		}
	}
	if err := unindexExecution(tx, rec); err != nil {
		return err
	}
	return tx.Bucket(bucketExecutions).Delete([]byte(id))
}

func deletePrefix(b *bbolt.Bucket, prefix []byte) error {
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

func putJSON(b *bbolt.Bucket, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(key, raw)
}

// keyArena hands out the event keys of one group commit from shared chunks: bbolt keeps a
// key until its transaction commits, and a group commit holds thousands of events, each of
// which had its own key allocation. Chunks are never reused, so each key stays valid as long
// as bbolt holds it.
type keyArena struct{ chunk []byte }

const keyArenaChunk = 4 << 10

// numbered is numberedKey(executionID, n), carved from the arena.
func (a *keyArena) numbered(executionID string, n uint64) []byte {
	key := a.carve(len(executionID) + 8)
	key = append(key, executionID...)
	return binary.BigEndian.AppendUint64(key, n)
}

// carve returns an empty slice with room for size bytes, from the arena (values too: bbolt
// keeps them until the commit as well). Appending more than size bytes reallocates.
func (a *keyArena) carve(size int) []byte {
	if size > keyArenaChunk/4 {
		return make([]byte, 0, size)
	}
	if cap(a.chunk)-len(a.chunk) < size {
		a.chunk = make([]byte, 0, keyArenaChunk)
	}
	start := len(a.chunk)
	a.chunk = a.chunk[:start+size]
	return a.chunk[start : start : start+size]
}

func numberedKey(executionID string, n uint64) []byte {
	key := make([]byte, len(executionID)+8)
	copy(key, executionID)
	binary.BigEndian.PutUint64(key[len(executionID):], n)
	return key
}

// idempotencyKey is the store key of an idempotency record. The anonymous tenant keeps the form
// written before tenancy existed (conversation id + 0x00 + key), so records of older files are
// still found. A named tenant's keys start with 0x01 (a conversation id never does), then the
// tenant's length and the tenant: no tenant name, however chosen, can make its keys collide with
// another tenant's.
func idempotencyKey(tenant, conversationID, key string) []byte {
	if tenant == "" {
		return []byte(conversationID + "\x00" + key)
	}
	out := make([]byte, 0, 1+binary.MaxVarintLen64+len(tenant)+len(conversationID)+1+len(key))
	out = append(out, 0x01)
	out = binary.AppendUvarint(out, uint64(len(tenant)))
	out = append(out, tenant...)
	out = append(out, conversationID...)
	out = append(out, 0x00)
	return append(out, key...)
}

// getJSON decodes the value under key into v; found is false when the key is absent. The bytes
// are decoded inside the transaction because bbolt's slices are only valid there.
func (s *Store) getJSON(bucket, key []byte, v any) (found bool, err error) {
	err = s.db.View(func(tx *bbolt.Tx) error {
		raw := tx.Bucket(bucket).Get(key)
		if raw == nil {
			return nil
		}
		found = true
		if err := json.Unmarshal(raw, v); err != nil {
			return fmt.Errorf("stored %s record %q: %w: %w", bucket, key, store.ErrUndecodable, err)
		}
		return nil
	})
	return found, err
}

func (s *Store) Conversation(id string) (store.Conversation, bool, error) {
	var c store.Conversation
	found, err := s.getJSON(bucketConversations, []byte(id), &c)
	return c, found, err
}

func (s *Store) Execution(id string) (store.Execution, bool, error) {
	var rec store.Execution
	found, err := s.getJSON(bucketExecutions, []byte(id), &rec)
	return rec, found, err
}

func (s *Store) Action(id string) (store.Action, bool, error) {
	var rec store.Action
	found, err := s.getJSON(bucketActions, []byte(id), &rec)
	return rec, found, err
}

func (s *Store) Idempotency(tenant, conversationID, key string) (store.Idempotency, bool, error) {
	k := idempotencyKey(tenant, conversationID, key)
	// The journal first: what it no longer holds was folded before the View below begins.
	if rec, ok := s.journal.idempotency(k); ok {
		return rec, true, nil
	}
	var rec store.Idempotency
	found, err := s.getJSON(bucketIdempotency, k, &rec)
	return rec, found, err
}

func (s *Store) Checkpoint(executionID string) ([]byte, bool, error) {
	return s.getBytes(bucketCheckpoints, []byte(executionID))
}

func (s *Store) ProviderState(key string) ([]byte, bool, error) {
	return s.getBytes(bucketProviderState, []byte(key))
}

// getBytes copies the value under key out of the transaction; found is false when absent.
func (s *Store) getBytes(bucket, key []byte) (value []byte, found bool, err error) {
	err = s.db.View(func(tx *bbolt.Tx) error {
		if raw := tx.Bucket(bucket).Get(key); raw != nil {
			value, found = append([]byte{}, raw...), true
		}
		return nil
	})
	return value, found, err
}

func (s *Store) Events(executionID string, after int64, limit int) ([]store.Event, error) {
	var out []store.Event
	prefix := []byte(executionID)
	err := s.db.View(func(tx *bbolt.Tx) error {
		// bbolt's values are only valid inside the transaction: copy the JSON into a few
		// large chunks instead of one allocation per event.
		var arena []byte
		c := tx.Bucket(bucketEvents).Cursor()
		for k, v := c.Seek(numberedKey(executionID, uint64(after)+1)); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(k) != len(prefix)+8 {
				continue
			}
			seq := int64(binary.BigEndian.Uint64(k[len(prefix):]))
			e, err := decodeEventValue(seq, v)
			if err != nil {
				return fmt.Errorf("event %s:%d: %w", executionID, seq, err)
			}
			if cap(arena)-len(arena) < len(e.JSON) {
				arena = make([]byte, 0, max(64<<10, len(e.JSON)))
			}
			start := len(arena)
			arena = append(arena, e.JSON...)
			e.JSON = arena[start:len(arena):len(arena)]
			out = append(out, e)
			if limit > 0 && len(out) >= limit {
				break
			}
		}
		return nil
	})
	return out, err
}

func (s *Store) LastSequence(executionID string) (int64, error) {
	var last int64
	prefix := []byte(executionID)
	err := s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketEvents).Cursor()
		// Seek just past this execution's key range, then step back once.
		k, _ := c.Seek(numberedKey(executionID, ^uint64(0)))
		if k == nil {
			k, _ = c.Last()
		} else if !bytes.Equal(k, numberedKey(executionID, ^uint64(0))) {
			k, _ = c.Prev()
		}
		if k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+8 {
			last = int64(binary.BigEndian.Uint64(k[len(prefix):]))
		}
		return nil
	})
	return last, err
}

func (s *Store) Artifacts(executionID string) ([]api.Artifact, error) {
	out := []api.Artifact{}
	prefix := []byte(executionID)
	err := s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketArtifacts).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var a api.Artifact
			if err := json.Unmarshal(v, &a); err != nil {
				return fmt.Errorf("artifact of %s: %w", executionID, err)
			}
			out = append(out, a)
		}
		return nil
	})
	return out, err
}

func (s *Store) ForEachExecution(visit func(store.Execution) bool, undecodable func(id string, err error)) error {
	return s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketExecutions).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			var rec store.Execution
			if err := json.Unmarshal(v, &rec); err != nil {
				undecodable(string(k), err)
				continue
			}
			if !visit(rec) {
				return nil
			}
		}
		return nil
	})
}

// Backup streams the file as of one read transaction (bbolt's Tx.WriteTo): a consistent
// snapshot, taken without stopping writers. The transaction stays open until w has taken every
// byte, and while it is open bbolt cannot remap the file to grow it, so a commit that needs a
// larger file waits for the backup to end; a slow reader of w makes such writers wait.
func (s *Store) Backup(w io.Writer) (int64, error) {
	var n int64
	err := s.db.View(func(tx *bbolt.Tx) error {
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	return n, err
}

func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.committer.Close() // what was queued before is committed first
		s.closeErr = s.db.Close()
	})
	return s.closeErr
}
