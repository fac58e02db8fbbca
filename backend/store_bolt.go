package backend

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Bucket layout of the bbolt file. Execution ids have a fixed length, so "execution id +
// big-endian number" keys sort by execution and then numerically, and a prefix scan finds one
// execution's events or artifacts in order.
var (
	bucketConversations = []byte("conversations") // conversation id → Conversation JSON
	bucketExecutions    = []byte("executions")    // execution id → executionRecord JSON
	bucketEvents        = []byte("events")        // execution id + uint64 BE sequence → RuntimeEvent JSON (wire form)
	bucketArtifacts     = []byte("artifacts")     // execution id + uint64 BE index → Artifact JSON
	bucketActions       = []byte("actions")       // action id → actionRecord JSON
	bucketIdempotency   = []byte("idempotency")   // conversation id + 0x00 + key → idempotencyRecord JSON
	allBuckets          = [][]byte{bucketConversations, bucketExecutions, bucketEvents, bucketArtifacts, bucketActions, bucketIdempotency}
)

// maxGroupCommit bounds how many Commit calls share one bbolt transaction, so one huge group
// cannot delay the first caller in it for long.
const maxGroupCommit = 512

var errStoreClosed = errors.New("store closed")

// boltStore is the file-backed store: one bbolt file. Writes go through a single group-commit
// loop: whoever arrives while a commit (and its fsync) is in flight joins the next one, so
// throughput grows with concurrency instead of falling to one fsync per event, and a lone writer
// never waits for a batching timer (bbolt's own db.Batch waits up to MaxBatchDelay).
type boltStore struct {
	db       *bolt.DB
	onCommit func(time.Duration)

	closeMu  sync.RWMutex // held shared by Commit while it waits, exclusively by Close
	closed   bool
	requests chan *commitRequest
	loopDone chan struct{}
}

type commitRequest struct {
	batch *storeBatch
	done  chan error
}

func openBoltStore(dir string, onCommit func(time.Duration)) (*boltStore, error) {
	if dir == "" {
		return nil, errors.New("data directory is required")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	path := filepath.Join(dir, StoreFileName)
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout:      2 * time.Second, // another process holds the file lock: fail instead of hanging
		FreelistType: bolt.FreelistMapType,
		// The freelist is rebuilt by a scan at open instead of being written on every commit:
		// fewer pages per commit, same crash safety.
		NoFreelistSync: true,
	})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	if onCommit == nil {
		onCommit = func(time.Duration) {}
	}
	s := &boltStore{
		db:       db,
		onCommit: onCommit,
		requests: make(chan *commitRequest, maxGroupCommit),
		loopDone: make(chan struct{}),
	}
	go s.commitLoop()
	return s, nil
}

func (s *boltStore) Commit(b *storeBatch) error {
	if b.empty() {
		return nil
	}
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return errStoreClosed
	}
	req := &commitRequest{batch: b, done: make(chan error, 1)}
	s.requests <- req
	return <-req.done
}

func (s *boltStore) commitLoop() {
	defer close(s.loopDone)
	lastGroup, lastDuration := 1, time.Duration(0)
	for first := range s.requests {
		group := s.gather(first, lastGroup, lastDuration)
		start := time.Now()
		s.commitGroup(group)
		lastGroup, lastDuration = len(group), time.Since(start)
	}
}

// gather collects the requests that share one transaction with first. Everything already queued
// joins. Beyond that, writers released by the previous commit are usually about to come back
// (an execution appends again as soon as its last append returned), so when the previous group
// was bigger the loop waits a short moment for them: a tenth of the last commit's duration, at
// most a millisecond. A lone writer never waits, and a few microseconds of waiting turn the
// alternation of tiny and big groups into steady big ones.
func (s *boltStore) gather(first *commitRequest, lastGroup int, lastDuration time.Duration) []*commitRequest {
	group := []*commitRequest{first}
	var window <-chan time.Time
	if lastGroup > 1 {
		timer := time.NewTimer(min(lastDuration/10, time.Millisecond))
		defer timer.Stop()
		window = timer.C
	}
	for len(group) < maxGroupCommit {
		select {
		case req, ok := <-s.requests:
			if !ok {
				return group
			}
			group = append(group, req)
			continue
		default:
		}
		if window == nil || len(group) >= lastGroup {
			return group
		}
		select {
		case req, ok := <-s.requests:
			if !ok {
				return group
			}
			group = append(group, req)
		case <-window:
			window = nil
		}
	}
	return group
}

func (s *boltStore) commitGroup(group []*commitRequest) {
	start := time.Now()
	err := s.db.Update(func(tx *bolt.Tx) error {
		for _, req := range group {
			if err := applyBatch(tx, req.batch); err != nil {
				return err
			}
		}
		return nil
	})
	s.onCommit(time.Since(start))
	if err != nil && len(group) > 1 {
		// One bad batch must not fail its neighbours: retry each on its own.
		for _, req := range group {
			start := time.Now()
			req.done <- s.db.Update(func(tx *bolt.Tx) error { return applyBatch(tx, req.batch) })
			s.onCommit(time.Since(start))
		}
		return
	}
	for _, req := range group {
		req.done <- err
	}
}

func applyBatch(tx *bolt.Tx, b *storeBatch) error {
	for _, c := range b.conversations {
		if err := putJSON(tx.Bucket(bucketConversations), []byte(c.Id), c); err != nil {
			return fmt.Errorf("put conversation %s: %w", c.Id, err)
		}
	}
	for _, rec := range b.executions {
		if err := putJSON(tx.Bucket(bucketExecutions), []byte(rec.Execution.Id), rec); err != nil {
			return fmt.Errorf("put execution %s: %w", rec.Execution.Id, err)
		}
	}
	events := tx.Bucket(bucketEvents)
	for _, e := range b.events {
		if err := events.Put(numberedKey(e.executionID, uint64(e.event.Sequence)), e.event.JSON); err != nil {
			return fmt.Errorf("put event %s:%d: %w", e.executionID, e.event.Sequence, err)
		}
	}
	for _, a := range b.artifacts {
		key := numberedKey(a.artifact.ExecutionId, uint64(a.index))
		if err := putJSON(tx.Bucket(bucketArtifacts), key, a.artifact); err != nil {
			return fmt.Errorf("put artifact %s: %w", a.artifact.Id, err)
		}
	}
	for _, a := range b.actions {
		if err := putJSON(tx.Bucket(bucketActions), []byte(a.Request.Id), a); err != nil {
			return fmt.Errorf("put action %s: %w", a.Request.Id, err)
		}
	}
	for _, r := range b.idempotency {
		if err := putJSON(tx.Bucket(bucketIdempotency), idempotencyKey(r.ConversationID, r.Key), r); err != nil {
			return fmt.Errorf("put idempotency record: %w", err)
		}
	}
	for _, rec := range b.deletions {
		if err := deleteExecution(tx, rec); err != nil {
			return fmt.Errorf("delete execution %s: %w", rec.Execution.Id, err)
		}
	}
	return nil
}

func deleteExecution(tx *bolt.Tx, rec executionRecord) error {
	id := rec.Execution.Id
	for _, name := range [][]byte{bucketEvents, bucketArtifacts} {
		if err := deletePrefix(tx.Bucket(name), []byte(id)); err != nil {
			return err
		}
	}
	actions := tx.Bucket(bucketActions)
	for _, actionID := range rec.ActionIDs {
		if err := actions.Delete([]byte(actionID)); err != nil {
			return err
		}
	}
	if rec.IdempotencyKey != nil {
		key := idempotencyKey(rec.Execution.ConversationId, *rec.IdempotencyKey)
		idem := tx.Bucket(bucketIdempotency)
		// Only if it still points here: never delete someone else's binding.
		var r idempotencyRecord
		if raw := idem.Get(key); raw != nil && json.Unmarshal(raw, &r) == nil && r.ExecutionID == id {
			if err := idem.Delete(key); err != nil {
				return err
			}
		}
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

func idempotencyKey(conversationID, key string) []byte {
	return []byte(conversationID + "\x00" + key)
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
		return json.Unmarshal(raw, v)
	})
	return found, err
}

func (s *boltStore) Conversation(id string) (api.Conversation, bool, error) {
	var c api.Conversation
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

func (s *boltStore) Idempotency(conversationID, key string) (idempotencyRecord, bool, error) {
	var rec idempotencyRecord
	found, err := s.getJSON(bucketIdempotency, idempotencyKey(conversationID, key), &rec)
	return rec, found, err
}

func (s *boltStore) Events(executionID string, after int64, limit int) ([]Event, error) {
	var out []Event
	prefix := []byte(executionID)
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketEvents).Cursor()
		for k, v := c.Seek(numberedKey(executionID, uint64(after)+1)); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(k) != len(prefix)+8 {
				continue
			}
			e, err := eventFromJSON(bytes.Clone(v))
			if err != nil {
				return fmt.Errorf("event %s:%d: %w", executionID, binary.BigEndian.Uint64(k[len(prefix):]), err)
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

func (s *boltStore) ForEachExecution(visit func(executionRecord) bool) error {
	return s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketExecutions).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			var rec executionRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("execution %s: %w", k, err)
			}
			if !visit(rec) {
				return nil
			}
		}
		return nil
	})
}

func (s *boltStore) Close() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return nil
	}
	s.closed = true
	close(s.requests) // no Commit can be sending: they hold closeMu shared while they do
	s.closeMu.Unlock()
	<-s.loopDone
	return s.db.Close()
}
