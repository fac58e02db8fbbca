package backend

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

	bolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Bucket layout of the bbolt file. Execution ids have a fixed length, so "execution id +
// big-endian number" keys sort by execution and then numerically, and a prefix scan finds one
// execution's events or artifacts in order.
var (
	bucketConversations = []byte("conversations") // conversation id → conversationRecord JSON
	bucketExecutions    = []byte("executions")    // execution id → executionRecord JSON
	bucketEvents        = []byte("events")        // execution id + uint64 BE sequence → RuntimeEvent JSON (wire form)
	bucketArtifacts     = []byte("artifacts")     // execution id + uint64 BE index → Artifact JSON
	bucketActions       = []byte("actions")       // action id → actionRecord JSON
	bucketIdempotency   = []byte("idempotency")   // idempotencyKey(tenant, conversation id, key) → idempotencyRecord JSON
	bucketCheckpoints   = []byte("checkpoints")   // execution id → the provider's checkpoint (opaque bytes)
	bucketProviderState = []byte("providerState") // provider id + 0x00 + key → opaque bytes
	allBuckets          = [][]byte{bucketConversations, bucketExecutions, bucketEvents, bucketArtifacts, bucketActions, bucketIdempotency, bucketCheckpoints, bucketProviderState, bucketOutbox, bucketOutboxFailed}
)

// maxQueued and maxQueuedBytes bound what waits for the next group commit (requests, and the
// bytes of their events). A writer that finds the queue full waits for the commit in flight to
// take it: back-pressure on a provider emitting faster than the disk commits, and a bound on
// the memory queued. Everything queued goes into one transaction.
const (
	maxQueued      = 16384
	maxQueuedBytes = 64 << 20
)

var errStoreClosed = errors.New("store closed")

// boltStore is the file-backed store: one bbolt file. Writes go through a single group-commit
// loop: everything queued while a commit (and its fsync) is in flight goes into the next
// transaction, so throughput grows with the number of writers and with how fast they submit
// instead of falling to one fsync per event, and a lone writer never waits for a batching timer
// (bbolt's own db.Batch waits up to MaxBatchDelay).
type boltStore struct {
	db       *bolt.DB
	onCommit func(time.Duration)
	// outbox makes webhook notifications from committed events (outbox_bolt.go); nil: none.
	// Set before the first commit, read by the commit loop under mu.
	outbox outboxPlanner
	// writeFault, when set (tests only, see FailWrites), fails every write transaction with
	// its error, inside the commit loop, exactly where a full disk fails one.
	writeFault atomic.Pointer[error]

	mu       sync.Mutex
	notFull  sync.Cond // signalled when the loop takes the queue
	queue    []*commitRequest
	queued   int              // approximate bytes of the queued batches
	spare    []*commitRequest // the previous group's slice, reused
	closed   bool
	wake     chan struct{} // capacity 1: something was queued
	loopDone chan struct{}
}

// commitRequest is one batch waiting for a group commit.
type commitRequest struct {
	batch *storeBatch
	// chain, when set, orders this batch after earlier batches of the same chain (one
	// execution's): once a batch of the chain failed, every later one fails with the same error
	// without being applied, so a failed append can never leave a gap in the sequences, and what
	// the chain committed before the failure is exactly what its done callbacks published.
	chain *commitChain
	// done is called on the commit goroutine, in submission order, once the batch is durable
	// (nil) or failed. It must be quick and must not submit.
	done func(error)
}

// commitChain is the failure domain of one execution's batches.
type commitChain struct {
	failed atomic.Pointer[error]
}

// err is the error that failed the chain, nil while it is healthy.
func (c *commitChain) err() error {
	if c == nil {
		return nil
	}
	if p := c.failed.Load(); p != nil {
		return *p
	}
	return nil
}

func (req *commitRequest) finish(err error) {
	if err != nil && req.chain != nil && req.chain.err() == nil {
		req.chain.failed.Store(&err)
	}
	req.done(err)
}

func openBoltStore(dir string, onCommit func(time.Duration)) (*boltStore, error) {
	if dir == "" {
		return nil, errors.New("data directory is required")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	db, err := openBoltFile(filepath.Join(dir, StoreFileName))
	if err != nil {
		return nil, err
	}
	// Stores written before the listing extension have no index yet: build it once.
	if _, err := buildListingIndex(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("build the listing index: %w", err)
	}
	if onCommit == nil {
		onCommit = func(time.Duration) {}
	}
	s := &boltStore{
		db:       db,
		onCommit: onCommit,
		wake:     make(chan struct{}, 1),
		loopDone: make(chan struct{}),
	}
	s.notFull.L = &s.mu
	go s.commitLoop()
	return s, nil
}

// Commit applies b durably and waits for it (conversations, recovery, retention).
func (s *boltStore) Commit(b *storeBatch) error {
	if b.empty() {
		return nil
	}
	done := make(chan error, 1)
	if err := s.Submit(&commitRequest{batch: b, done: func(err error) { done <- err }}); err != nil {
		return err
	}
	return <-done
}

// Submit queues req for the next group commit and returns without waiting for it, unless the
// queue is full (then it waits for room). errStoreClosed once Close has begun.
func (s *boltStore) Submit(req *commitRequest) error {
	size := req.batch.size()
	s.mu.Lock()
	// An empty queue takes any batch, however big: the bounds only make writers wait their turn.
	for len(s.queue) > 0 && (len(s.queue) >= maxQueued || s.queued+size > maxQueuedBytes) && !s.closed {
		s.notFull.Wait()
	}
	if s.closed {
		s.mu.Unlock()
		return errStoreClosed
	}
	s.queue = append(s.queue, req)
	s.queued += size
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

// commitLoop takes everything queued, commits it as one transaction, reports each request, and
// starts over. After Close it drains what was queued before, then ends.
func (s *boltStore) commitLoop() {
	defer close(s.loopDone)
	for {
		s.mu.Lock()
		for len(s.queue) == 0 && !s.closed {
			s.mu.Unlock()
			<-s.wake
			s.mu.Lock()
		}
		if len(s.queue) == 0 { // closed and drained
			s.mu.Unlock()
			return
		}
		group := s.queue
		s.queue, s.spare = s.spare[:0], nil
		s.queued = 0
		s.notFull.Broadcast()
		s.mu.Unlock()

		s.commitGroup(group)

		clear(group) // drop the batches, so they can be collected while the slice is reused
		s.mu.Lock()
		if s.spare == nil && cap(group) <= 4*maxQueued {
			s.spare = group[:0]
		}
		s.mu.Unlock()
	}
}

func (s *boltStore) commitGroup(group []*commitRequest) {
	s.mu.Lock()
	planner := s.outbox
	s.mu.Unlock()
	notify := false // a new outbox row was written: wake the sender once committed
	apply := func(tx *bolt.Tx, b *storeBatch) error {
		if err := applyBatch(tx, b); err != nil {
			return err
		}
		wrote, err := applyOutbox(tx, b, planner, time.Now())
		notify = notify || wrote
		return err
	}
	defer func() {
		if notify && planner != nil {
			planner.committed()
		}
	}()
	start := time.Now()
	err := s.db.Update(func(tx *bolt.Tx) error {
		if err := s.injectedFault(); err != nil {
			return err
		}
		packAppends(tx)
		for _, req := range group {
			if req.chain.err() != nil {
				continue // failed below, without being applied
			}
			if err := apply(tx, req.batch); err != nil {
				return err
			}
		}
		return nil
	})
	s.onCommit(time.Since(start))
	if err != nil && len(group) > 1 {
		// One bad batch must not fail its neighbours: retry each on its own, in order.
		for _, req := range group {
			if cerr := req.chain.err(); cerr != nil {
				req.finish(cerr)
				continue
			}
			start := time.Now()
			err := s.db.Update(func(tx *bolt.Tx) error {
				if err := s.injectedFault(); err != nil {
					return err
				}
				packAppends(tx)
				return apply(tx, req.batch)
			})
			s.onCommit(time.Since(start))
			req.finish(err)
		}
		return
	}
	for _, req := range group {
		if cerr := req.chain.err(); cerr != nil {
			req.finish(cerr)
			continue
		}
		req.finish(err)
	}
}

// injectedFault is the error writes fail with while a test injects one (see writeFault).
func (s *boltStore) injectedFault() error {
	if p := s.writeFault.Load(); p != nil {
		return *p
	}
	return nil
}

// packAppends lets the buckets keyed by execution id fill their pages before splitting them.
// Execution ids are time-ordered (newExecutionID), so their keys arrive at the right edge of
// the tree, where bbolt's default split at half a page would leave every page half empty.
func packAppends(tx *bolt.Tx) {
	for _, name := range [][]byte{bucketExecutions, bucketEvents, bucketArtifacts} {
		tx.Bucket(name).FillPercent = 0.9
	}
}

func applyBatch(tx *bolt.Tx, b *storeBatch) error {
	for _, c := range b.conversations {
		if err := putJSON(tx.Bucket(bucketConversations), []byte(c.ID), c); err != nil {
			return fmt.Errorf("put conversation %s: %w", c.ID, err)
		}
	}
	for _, rec := range b.executions {
		if err := putJSON(tx.Bucket(bucketExecutions), []byte(rec.Execution.ID), rec); err != nil {
			return fmt.Errorf("put execution %s: %w", rec.Execution.ID, err)
		}
		if err := indexExecution(tx, rec); err != nil {
			return fmt.Errorf("index execution %s: %w", rec.Execution.ID, err)
		}
	}
	events := tx.Bucket(bucketEvents)
	for _, e := range b.events {
		if err := events.Put(numberedKey(e.executionID, uint64(e.event.Sequence)), e.event.JSON); err != nil {
			return fmt.Errorf("put event %s:%d: %w", e.executionID, e.event.Sequence, err)
		}
	}
	for _, a := range b.artifacts {
		key := numberedKey(a.artifact.ExecutionID, uint64(a.index))
		if err := putJSON(tx.Bucket(bucketArtifacts), key, a.artifact); err != nil {
			return fmt.Errorf("put artifact %s: %w", a.artifact.ID, err)
		}
	}
	for _, a := range b.actions {
		if err := putJSON(tx.Bucket(bucketActions), []byte(a.Request.ID), a); err != nil {
			return fmt.Errorf("put action %s: %w", a.Request.ID, err)
		}
	}
	for _, r := range b.idempotency {
		if err := putJSON(tx.Bucket(bucketIdempotency), idempotencyKey(r.Tenant, r.ConversationID, r.Key), r); err != nil {
			return fmt.Errorf("put idempotency record: %w", err)
		}
	}
	for _, c := range b.checkpoints {
		if err := tx.Bucket(bucketCheckpoints).Put([]byte(c.executionID), c.data); err != nil {
			return fmt.Errorf("put checkpoint of %s: %w", c.executionID, err)
		}
	}
	for _, st := range b.providerState {
		if err := tx.Bucket(bucketProviderState).Put([]byte(st.key), st.value); err != nil {
			return fmt.Errorf("put provider state: %w", err)
		}
	}
	for _, rec := range b.deletions {
		if err := deleteExecution(tx, rec); err != nil {
			return fmt.Errorf("delete execution %s: %w", rec.Execution.ID, err)
		}
	}
	return nil
}

func deleteExecution(tx *bolt.Tx, rec executionRecord) error {
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
		var r idempotencyRecord
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

func deletePrefix(b *bolt.Bucket, prefix []byte) error {
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

func putJSON(b *bolt.Bucket, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(key, raw)
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
func (s *boltStore) getJSON(bucket, key []byte, v any) (found bool, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		raw := tx.Bucket(bucket).Get(key)
		if raw == nil {
			return nil
		}
		found = true
		if err := json.Unmarshal(raw, v); err != nil {
			return fmt.Errorf("stored %s record %q cannot be decoded: %w", bucket, key, err)
		}
		return nil
	})
	return found, err
}

func (s *boltStore) Conversation(id string) (conversationRecord, bool, error) {
	var c conversationRecord
	found, err := s.getJSON(bucketConversations, []byte(id), &c)
	return c, found, err
}

func (s *boltStore) Execution(id string) (executionRecord, bool, error) {
	var rec executionRecord
	found, err := s.getJSON(bucketExecutions, []byte(id), &rec)
	return rec, found, err
}

func (s *boltStore) Action(id string) (actionRecord, bool, error) {
	var rec actionRecord
	found, err := s.getJSON(bucketActions, []byte(id), &rec)
	return rec, found, err
}

func (s *boltStore) Idempotency(tenant, conversationID, key string) (idempotencyRecord, bool, error) {
	var rec idempotencyRecord
	found, err := s.getJSON(bucketIdempotency, idempotencyKey(tenant, conversationID, key), &rec)
	return rec, found, err
}

func (s *boltStore) Checkpoint(executionID string) ([]byte, bool, error) {
	return s.getBytes(bucketCheckpoints, []byte(executionID))
}

func (s *boltStore) ProviderState(key string) ([]byte, bool, error) {
	return s.getBytes(bucketProviderState, []byte(key))
}

// getBytes copies the value under key out of the transaction; found is false when absent.
func (s *boltStore) getBytes(bucket, key []byte) (value []byte, found bool, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		if raw := tx.Bucket(bucket).Get(key); raw != nil {
			value, found = append([]byte{}, raw...), true
		}
		return nil
	})
	return value, found, err
}

func (s *boltStore) Events(executionID string, after int64, limit int) ([]Event, error) {
	var out []Event
	prefix := []byte(executionID)
	err := s.db.View(func(tx *bolt.Tx) error {
		// bbolt's values are only valid inside the transaction: copy them into a few large
		// chunks instead of one allocation per event.
		var arena []byte
		c := tx.Bucket(bucketEvents).Cursor()
		for k, v := c.Seek(numberedKey(executionID, uint64(after)+1)); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(k) != len(prefix)+8 {
				continue
			}
			if cap(arena)-len(arena) < len(v) {
				arena = make([]byte, 0, max(64<<10, len(v)))
			}
			start := len(arena)
			arena = append(arena, v...)
			raw := arena[start:len(arena):len(arena)]
			seq := int64(binary.BigEndian.Uint64(k[len(prefix):]))
			e, err := eventFromStored(seq, raw)
			if err != nil {
				return fmt.Errorf("event %s:%d: %w", executionID, seq, err)
			}
			out = append(out, e)
			if limit > 0 && len(out) >= limit {
				break
			}
		}
		return nil
	})
	return out, err
}

func (s *boltStore) LastSequence(executionID string) (int64, error) {
	var last int64
	prefix := []byte(executionID)
	err := s.db.View(func(tx *bolt.Tx) error {
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

func (s *boltStore) Artifacts(executionID string) ([]api.Artifact, error) {
	out := []api.Artifact{}
	prefix := []byte(executionID)
	err := s.db.View(func(tx *bolt.Tx) error {
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

func (s *boltStore) ForEachExecution(visit func(executionRecord) bool, undecodable func(id string, err error)) error {
	return s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketExecutions).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			var rec executionRecord
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
func (s *boltStore) Backup(w io.Writer) (int64, error) {
	var n int64
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	return n, err
}

func (s *boltStore) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.notFull.Broadcast()
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	<-s.loopDone // what was queued before is committed first
	return s.db.Close()
}
