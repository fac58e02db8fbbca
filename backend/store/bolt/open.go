package bolt

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	bbolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/harness-edge/harness-edge/backend/store"
)

// damagedStoreError says, in one line, which file is damaged, how, and what to do about it.
type damagedStoreError struct {
	path   string
	reason string
}

func (e *damagedStoreError) Error() string {
	return fmt.Sprintf("the store file %s is damaged (%s): stop the server, replace it with a backup "+
		"(see docs/operations.md) or move it away to start with an empty store", e.path, e.reason)
}

func (e *damagedStoreError) Is(target error) bool { return target == store.ErrDamaged }

func damaged(path, format string, args ...any) error {
	return &damagedStoreError{path: path, reason: fmt.Sprintf(format, args...)}
}

// lockTimeout bounds the wait for another process's lock on the file: fail instead of hanging.
const lockTimeout = 2 * time.Second

// openBoltFile opens the store file at path, creating it only when there is no file at all.
//
// bbolt maps the file into memory and trusts what it reads there: a damaged file makes it
// panic (its page assertions) or fault, and a memory fault in mapped memory kills the process
// whichever goroutine it happens in — bbolt's own Open, with NoFreelistSync, walks every page
// in a goroutine of its own to rebuild the freelist, where nothing can recover. So an existing
// file is checked first, by checkStoreFile, in a read-only mapping and in a goroutine where a
// fault is a recoverable panic (debug.SetPanicOnFault); only a file that passed is opened for
// writing, and that Open and its first transaction still run under the same guard.
func openBoltFile(path string) (*bbolt.DB, error) {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// A new store.
	case err != nil:
		return nil, fmt.Errorf("open %s: %w", path, err)
	case !info.Mode().IsRegular():
		return nil, damaged(path, "not a regular file")
	case info.Size() == 0:
		// bbolt would initialise an empty store in it: every execution silently gone. A
		// zero-length file where a store should be is damage (or an interrupted copy).
		return nil, damaged(path, "the file is empty (0 bytes)")
	default:
		if err := checkStoreFile(path); err != nil {
			return nil, err
		}
	}

	var file *os.File // kept to release the lock if bbolt panics before handing us the DB
	var db *bbolt.DB
	err = guardFaults(func() error {
		var err error
		db, err = bbolt.Open(path, 0o600, &bbolt.Options{
			Timeout:      lockTimeout,
			FreelistType: bbolt.FreelistMapType,
			// The freelist is rebuilt by a scan at open instead of being written on every
			// commit: fewer pages per commit, same crash safety.
			NoFreelistSync: true,
			OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
				f, err := os.OpenFile(name, flag, perm)
				file = f
				return f, err
			},
		})
		if err != nil {
			return err
		}
		return prepareLayout(db)
	})
	var panicked *panicError
	switch {
	case err == nil:
		return db, nil
	case errors.As(err, &panicked):
		if db != nil {
			_ = db.Close()
		} else if file != nil {
			_ = file.Close()
		}
		return nil, damaged(path, "%v", panicked.value)
	default:
		if db != nil {
			_ = db.Close()
		}
		return nil, openError(path, err)
	}
}

// openError tells an environment failure (permissions, another process's lock, I/O), which
// is reported as is, from a file that is not a usable store.
func openError(path string, err error) error {
	var pathErr *fs.PathError
	var errno syscall.Errno
	if errors.Is(err, bolterrors.ErrTimeout) {
		// Another process holds the file: a caller may open it later (store.ErrLocked).
		return fmt.Errorf("open %s: %w: %w", path, store.ErrLocked, err)
	}
	var newer *newerFormatError
	if errors.As(err, &pathErr) || errors.As(err, &errno) || errors.As(err, &newer) {
		return fmt.Errorf("open %s: %w", path, err)
	}
	return damaged(path, "%v", err)
}

// checkStoreFile checks an existing store file before it is opened for writing: the meta
// pages (magic, version, checksum: bbolt's own check when it maps the file read-only), the
// size against the highest page the meta page names (a truncated file would fault past its
// end), and every page reachable from the root: each branch and leaf page, each key and the
// ends of each value are read once, in key order, as bbolt's cursor finds them. A page that
// is not what its parent says (bbolt's page assertions) or an address outside the file (a
// fault) ends the check with an error instead of the process.
//
// The cost is one pass over the reachable pages, about what bbolt's own Open spends
// rebuilding the freelist; docs/operations.md gives a figure. bbolt's tx.Check would do more
// (it also proves every page is either reachable or free) at a few times the cost, in a
// goroutine of its own where a fault could not be recovered, so it is not used here.
func checkStoreFile(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	var file *os.File
	var db *bbolt.DB
	err = guardFaults(func() error {
		var err error
		db, err = bbolt.Open(path, 0o600, &bbolt.Options{
			ReadOnly: true,
			Timeout:  lockTimeout,
			OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
				f, err := os.OpenFile(name, flag, perm)
				file = f
				return f, err
			},
		})
		if err != nil {
			return err
		}
		return db.View(func(tx *bbolt.Tx) error {
			pageSize := int64(db.Info().PageSize)
			if info.Size()%pageSize != 0 {
				return fmt.Errorf("its size, %d bytes, is not a multiple of its page size, %d", info.Size(), pageSize)
			}
			if tx.Size() > info.Size() {
				return fmt.Errorf("it is truncated: its pages reach %d bytes but the file has %d", tx.Size(), info.Size())
			}
			return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
				return readBucket(name, b)
			})
		})
	})
	if db != nil {
		_ = db.Close()
	} else if file != nil {
		_ = file.Close()
	}
	if err == nil {
		return nil
	}
	if panicked := (*panicError)(nil); errors.As(err, &panicked) {
		return damaged(path, "%v", panicked.value)
	}
	return openError(path, err)
}

// touched keeps the bytes readBucket reads observable, so the reads cannot be optimised away
// (atomic: checks of different data directories may run at once).
var touched atomic.Uint32

// readBucket reads every key and the first and last byte of every value of b, in cursor
// order, and descends into nested buckets. Keys must come in strictly increasing order.
func readBucket(name []byte, b *bbolt.Bucket) error {
	var sum byte
	defer func() { touched.Add(uint32(sum)) }()
	c := b.Cursor()
	var prev []byte
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			return fmt.Errorf("bucket %q: keys out of order", name)
		}
		prev = k
		sum ^= k[0] ^ k[len(k)-1]
		if len(v) > 0 {
			sum ^= v[0] ^ v[len(v)-1]
		} else if v == nil {
			if child := b.Bucket(k); child != nil {
				if err := readBucket(k, child); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// panicError is a panic (or memory fault) that guardFaults recovered.
type panicError struct{ value any }

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v", e.value) }

// guardFaults runs fn in a goroutine of its own in which a memory fault (reading a mapped
// file past its end, or at an address a damaged page points to) is a panic instead of a crash,
// and turns any panic into a *panicError. SetPanicOnFault applies to the calling goroutine
// only, hence the goroutine.
func guardFaults(fn func() error) error {
	done := make(chan error, 1)
	go func() {
		debug.SetPanicOnFault(true)
		defer func() {
			if v := recover(); v != nil {
				done <- &panicError{value: v}
			}
		}()
		done <- fn()
	}()
	return <-done
}
