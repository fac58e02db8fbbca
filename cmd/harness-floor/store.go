package main

import (
	"errors"
	"time"

	"go.etcd.io/bbolt"
)

// floorStore is one bbolt file written by a group commit: writers queue a Put and wait; one
// goroutine takes everything queued while the previous commit was syncing and writes it in one
// read-write transaction (bbolt syncs the data pages, then the meta page: two fdatasyncs), as
// harness-edge's committer does. The bbolt options are harness-edge's (backend/store/bolt).
type floorStore struct {
	db      *bbolt.DB
	in      chan putRequest
	done    chan struct{}
	commits commitHistogram
	// linger is how long a commit waits, from its first request's arrival, for others to join
	// (harness-edge's commit_linger; 0: none, a commit takes what queued while the last synced).
	linger time.Duration
}

type putRequest struct {
	key, value []byte
	at         time.Time   // when it was queued: the linger counts from the first of a commit
	result     chan error  // put waits here; nil for putAsync
	done       func(error) // putAsync's callback, on the commit goroutine in queue order
}

var bucketName = []byte("executions")

// maxBatch bounds one commit, as harness-edge's commit queue is bounded.
const maxBatch = 1024

// noSync (measurement only) skips bbolt's two fdatasyncs per commit.
func openStore(path string, noSync bool) (*floorStore, error) {
	return openStoreLinger(path, noSync, 0)
}

// openStoreLinger is openStore whose commits wait up to linger for more requests.
func openStoreLinger(path string, noSync bool, linger time.Duration) (*floorStore, error) {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{
		Timeout:        time.Second,
		FreelistType:   bbolt.FreelistMapType,
		NoFreelistSync: true,
		NoSync:         noSync,
	})
	if err != nil {
		return nil, err
	}
	if err := db.Update(func(tx *bbolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketName)
		return err
	}); err != nil {
		db.Close()
		return nil, err
	}
	s := &floorStore{db: db, in: make(chan putRequest, maxBatch), done: make(chan struct{}), linger: linger}
	go s.commitLoop()
	return s, nil
}

var errClosed = errors.New("harness-floor: store closed")

// put writes value under key durably: it returns once the commit holding it is synced.
func (s *floorStore) put(key, value []byte) error {
	req := putRequest{key: key, value: value, result: make(chan error, 1)}
	if s.linger > 0 {
		req.at = time.Now()
	}
	select {
	case s.in <- req:
	case <-s.done:
		return errClosed
	}
	select {
	case err := <-req.result:
		return err
	case <-s.done:
		return errClosed
	}
}

// putAsync queues a Put and returns; done is called once it is durable (or failed), on the
// commit goroutine, in the order the puts were queued: a live execution's provider goes on
// producing while its events commit, as harness-edge's does, and streams them in order.
func (s *floorStore) putAsync(key, value []byte, done func(error)) {
	req := putRequest{key: key, value: value, done: done}
	if s.linger > 0 {
		req.at = time.Now()
	}
	select {
	case s.in <- req:
	case <-s.done:
		done(errClosed)
	}
}

func (s *floorStore) commitLoop() {
	batch := make([]putRequest, 0, maxBatch)
	for {
		var first putRequest
		select {
		case first = <-s.in:
		case <-s.done:
			return
		}
		batch = append(batch[:0], first)
		if wait := time.Until(first.at.Add(s.linger)); s.linger > 0 && wait > 0 {
			time.Sleep(wait)
		}
	drain:
		for len(batch) < maxBatch {
			select {
			case r := <-s.in:
				batch = append(batch, r)
			default:
				break drain
			}
		}
		began := time.Now()
		err := s.db.Update(func(tx *bbolt.Tx) error {
			b := tx.Bucket(bucketName)
			for _, r := range batch {
				if err := b.Put(r.key, r.value); err != nil {
					return err
				}
			}
			return nil
		})
		s.commits.observe(time.Since(began))
		for _, r := range batch {
			if r.done != nil {
				r.done(err)
			} else {
				r.result <- err
			}
		}
	}
}

// get reads the value stored under key (nil when there is none).
func (s *floorStore) get(key []byte) (value []byte, err error) {
	err = s.db.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket(bucketName).Get(key); v != nil {
			value = append([]byte(nil), v...)
		}
		return nil
	})
	return value, err
}

func (s *floorStore) close() error {
	close(s.done)
	return s.db.Close()
}

// count is the number of executions stored (for the tests).
func (s *floorStore) count() (n int, err error) {
	err = s.db.View(func(tx *bbolt.Tx) error {
		n = tx.Bucket(bucketName).Stats().KeyN
		return nil
	})
	return n, err
}
