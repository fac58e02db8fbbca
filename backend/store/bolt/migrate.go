package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"

	bbolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend/store"
)

// Format 1 is the layout of the releases before the format was recorded (no meta bucket):
// events were their wire JSON alone (the type was read back from its tail), the provider
// state and the webhook outbox were in buckets named providerState, webhookOutbox and
// webhookFailed, executions_by_conversation held the state and idempotency records and
// by-conversation entries were written straight into their buckets. Open rewrites such a file
// once (migrateFormat1), in transactions of a bounded size: a crash in the middle leaves a
// file that the next Open goes on migrating (the meta bucket then says format 1).
var (
	format1ProviderState = []byte("providerState")
	format1Outbox        = []byte("webhookOutbox")
	format1OutboxFailed  = []byte("webhookFailed")
	metaMigrateEvents    = []byte("migrate.events") // the next events key format 1's rewrite converts
)

// migrateChunk bounds the records one migration transaction rewrites (its memory).
const migrateChunk = 20000

// prepareLayout makes db a store of the current format: it lays out a new file, migrates a
// file of format 1 and refuses one of a format it does not know.
func prepareLayout(db *bbolt.DB) error {
	format, err := readFormat(db)
	if err != nil {
		return err
	}
	switch format {
	case 0:
		return db.Update(func(tx *bbolt.Tx) error {
			if err := createBuckets(tx); err != nil {
				return err
			}
			return tx.Bucket(bucketMeta).Put(metaFormat, []byte(strconv.Itoa(formatVersion)))
		})
	case 1:
		if err := migrateFormat1(db); err != nil {
			return fmt.Errorf("migrate the store from format 1 to %d: %w", formatVersion, err)
		}
		return nil
	case formatVersion:
		return nil
	}
	return &newerFormatError{format}
}

// newerFormatError: the file was written by a newer release. Not damage: Open reports it as is.
type newerFormatError struct{ format int }

func (e *newerFormatError) Error() string {
	return fmt.Sprintf("the store has format %d, written by a newer release; this one reads format %d and older (see docs/operations.md, \"Upgrades\")", e.format, formatVersion)
}

// readFormat is the file's format: 0 for a file without buckets (new), 1 for one without a
// recorded format or still migrating from it.
func readFormat(db *bbolt.DB) (int, error) {
	format := 0
	err := db.View(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			if tx.Bucket(bucketExecutions) != nil {
				format = 1
			}
			return nil
		}
		n, err := strconv.Atoi(string(meta.Get(metaFormat)))
		if err != nil || n < 1 {
			return fmt.Errorf("the store's format %q is not a version number", meta.Get(metaFormat))
		}
		format = n
		return nil
	})
	return format, err
}

func createBuckets(tx *bbolt.Tx) error {
	for _, name := range allBuckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	return nil
}

func migrateFormat1(db *bbolt.DB) error {
	// The index of a format-1 file older than the listing first, from the records, before
	// the buckets of format 2 (those two among them) exist.
	if _, err := buildListingIndex(db); err != nil {
		return fmt.Errorf("build the listing index: %w", err)
	}
	err := db.Update(func(tx *bbolt.Tx) error {
		if err := createBuckets(tx); err != nil {
			return err
		}
		meta := tx.Bucket(bucketMeta)
		if meta.Get(metaFormat) == nil {
			return meta.Put(metaFormat, []byte("1")) // migrating
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := rewriteFormat1Events(db); err != nil {
		return fmt.Errorf("events: %w", err)
	}
	for _, move := range [][2][]byte{{format1ProviderState, bucketProviderState}, {format1Outbox, bucketOutbox}, {format1OutboxFailed, bucketOutboxFailed}} {
		if err := moveBucket(db, move[0], move[1]); err != nil {
			return fmt.Errorf("move %s to %s: %w", move[0], move[1], err)
		}
	}
	return db.Update(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if err := meta.Delete(metaMigrateEvents); err != nil {
			return err
		}
		return meta.Put(metaFormat, []byte(strconv.Itoa(formatVersion)))
	})
}

// rewriteFormat1Events gives every event its type as a field of its own, migrateChunk events a
// transaction, resuming where an interrupted migration stopped. An event that cannot be read
// keeps its bytes behind an empty type: reads still report it as undecodable.
func rewriteFormat1Events(db *bbolt.DB) error {
	for {
		done := false
		err := db.Update(func(tx *bbolt.Tx) error {
			meta, events := tx.Bucket(bucketMeta), tx.Bucket(bucketEvents)
			events.FillPercent = 0.9
			type kv struct{ k, v []byte }
			var chunk []kv
			c := events.Cursor()
			k, v := c.First()
			if from := meta.Get(metaMigrateEvents); from != nil {
				k, v = c.Seek(from)
			}
			for ; k != nil && len(chunk) < migrateChunk; k, v = c.Next() {
				chunk = append(chunk, kv{bytes.Clone(k), format1EventValue(k, v)})
			}
			for _, e := range chunk {
				if err := events.Put(e.k, e.v); err != nil {
					return err
				}
			}
			if k == nil {
				done = true
				return meta.Delete(metaMigrateEvents)
			}
			return meta.Put(metaMigrateEvents, bytes.Clone(k))
		})
		if err != nil || done {
			return err
		}
	}
}

// format1EventValue is the format-2 value of a format-1 event stored under k with value v.
func format1EventValue(k, v []byte) []byte {
	if len(k) > 8 {
		seq := int64(binary.BigEndian.Uint64(k[len(k)-8:]))
		if e, err := store.EventFromStored(seq, v); err == nil {
			return appendEventValue(make([]byte, 0, eventValueLen(e)), e)
		}
	}
	return append([]byte{0}, v...)
}

// moveBucket moves every key of bucket from into bucket to, migrateChunk keys a transaction,
// and deletes from once it is empty. Each transaction moves its keys whole, so an interrupted
// move goes on where it stopped.
func moveBucket(db *bbolt.DB, from, to []byte) error {
	for {
		done := false
		err := db.Update(func(tx *bbolt.Tx) error {
			src, dst := tx.Bucket(from), tx.Bucket(to)
			if src == nil {
				done = true
				return nil
			}
			type kv struct{ k, v []byte }
			var chunk []kv
			c := src.Cursor()
			for k, v := c.First(); k != nil && len(chunk) < migrateChunk; k, v = c.Next() {
				chunk = append(chunk, kv{bytes.Clone(k), bytes.Clone(v)})
			}
			if len(chunk) == 0 {
				done = true
				return tx.DeleteBucket(from)
			}
			for _, e := range chunk {
				if err := dst.Put(e.k, e.v); err != nil {
					return err
				}
				if err := src.Delete(e.k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil || done {
			return err
		}
	}
}
