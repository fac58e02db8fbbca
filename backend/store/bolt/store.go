// Package bolt is the embedded store: one bbolt file in a directory, for one process. It
// implements store.Store (not store.Cluster: a bbolt file cannot be shared by several nodes).
package bolt

import (
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
)

// FileName is the bbolt file created inside the store's directory.
const FileName = "harness.db"

// Options tune Open.
type Options struct {
	// Observe, when set, is told how long each write transaction took (metrics).
	Observe func(time.Duration)
	// CommitLinger is store.CommitterOptions.Linger: how long a group commit waits for more
	// writes while writers are concurrent; 0: not at all.
	CommitLinger time.Duration
	// IndexJournalLimit is how many index journal entries wait before they are folded into
	// their buckets (journal.go); 0: DefaultIndexJournalLimit.
	IndexJournalLimit int
	// StreamIndexFold is how many stream log entries wait before the conversation index takes
	// them in (streamlog.go); 0: DefaultStreamIndexFold.
	StreamIndexFold int
}

// Store is the file-backed store. Writes go through store.Committer's group commit: everything
// queued while a commit (and its fsync) is in flight goes into the next bbolt transaction
// (bbolt's own db.Batch would wait up to MaxBatchDelay for a lone writer).
type Store struct {
	db        *bbolt.DB
	dir       string
	committer *store.Committer
	journal   *indexJournal // idempotency and by-conversation entries not yet folded
	log       *streamLog    // the stream log's identity, ends and observer (streamlog.go)
	// unfinished is every non-terminal execution, for admissions (admission.go); commit
	// goroutine only.
	unfinished unfinishedSet
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
	if err := buildApprovalIndexes(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("build the approval indexes: %w", err)
	}
	journal := newIndexJournal(opts.IndexJournalLimit)
	if err := journal.load(db); err != nil {
		db.Close()
		return nil, damaged(filepath.Join(dir, FileName), "%v", err)
	}
	log, err := openStreamLog(db, opts.StreamIndexFold)
	if err != nil {
		db.Close()
		return nil, damaged(filepath.Join(dir, FileName), "stream log: %v", err)
	}
	s := &Store{db: db, dir: dir, journal: journal, log: log}
	s.committer = store.NewCommitter(s.applyGroup, store.CommitterOptions{Observe: opts.Observe, Linger: opts.CommitLinger})
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
	ut := s.unfinished.begin()
	now := time.Now()
	err := s.db.Update(func(tx *bbolt.Tx) error {
		if p := s.writeFault.Load(); p != nil {
			return *p
		}
		packAppends(tx)
		keys := &keyArena{}
		jt = s.journal.begin(tx, keys)
		// A full journal is folded before it grows further.
		if jt.pending() >= s.journal.limit {
			if err := jt.fold(); err != nil {
				return fmt.Errorf("fold the index journal: %w", err)
			}
		}
		s.log.beginTx()
		for _, req := range group {
			if err := checkNotErased(tx, req.Batch); err != nil { // erasure.go
				return err
			}
			if err := checkNotSealed(tx, req.Batch); err != nil { // seal.go
				return err
			}
			if err := applySeals(tx, req.Batch); err != nil {
				return err
			}
			if err := applyBatch(tx, req.Batch, latest, keys, jt, ut); err != nil {
				return err
			}
			wrote, err := applyOutbox(tx, req.Batch, planner, now)
			if err != nil {
				return err
			}
			notify = notify || wrote
			if len(req.Batch.Erasures) > 0 {
				wrote, err := s.applyErasures(tx, req.Batch, jt, ut, planner)
				if err != nil {
					return err
				}
				notify = notify || wrote
			}
		}
		return s.log.write(tx, group, keys, now)
	})
	if err == nil {
		jt.commit()
		ut.commit()
		s.log.committed()
	}
	if err == nil && notify && planner != nil {
		planner.Committed()
	}
	return err
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
