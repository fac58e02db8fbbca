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
// by-conversation entries were written straight into their buckets. Format 2 gave events their
// type as a field of their own and renamed those buckets. Format 3 gives events a checksum.
//
// Open rewrites a file of format 1 or 2 once, in transactions of a bounded size: every event
// is checked in full (store.LegacyEvent) and written with its checksum, so a value damaged
// before the upgrade is found then and stays undecodable, and every value that passed is
// checked on each later read. The first transaction records format 3 and a progress marker: a
// crash in the middle leaves a file the next Open goes on rewriting from the marker, and that a
// release of format 2 refuses as newer instead of misreading it.
var (
	format1ProviderState = []byte("providerState")
	format1Outbox        = []byte("webhookOutbox")
	format1OutboxFailed  = []byte("webhookFailed")
	// format1MigrateEvents is the progress of the format 1 → 2 rewrite of releases of format 2:
	// in a file one of them left half rewritten (format "1" recorded), the events before it are
	// of format 2, the others of format 1 (legacyEventValue reads both).
	format1MigrateEvents = []byte("migrate.events")
	// metaMigrateChecksums is the next events key the rewrite to format 3 converts, present
	// while it is unfinished.
	metaMigrateChecksums = []byte("migrate.checksums")
)

// migrateChunk bounds the records one migration transaction rewrites (its memory).
const migrateChunk = 20000

// prepareLayout makes db a store of the current format: it lays out a new file, migrates a
// file of format 1 or 2 (or finishes a migration a crash interrupted) and refuses one of a
// format it does not know.
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
		// The index of a format-1 file older than the listing first, from the records,
		// before the buckets of the current format (those two among them) exist.
		if _, err := buildListingIndex(db); err != nil {
			return fmt.Errorf("migrate the store from format 1: build the listing index: %w", err)
		}
		err = db.Update(func(tx *bbolt.Tx) error {
			if err := createBuckets(tx); err != nil {
				return err
			}
			return beginRewrite(tx.Bucket(bucketMeta))
		})
	case 2:
		err = db.Update(func(tx *bbolt.Tx) error { return beginRewrite(tx.Bucket(bucketMeta)) })
	case formatVersion:
	default:
		return &newerFormatError{format}
	}
	if err == nil {
		err = finishRewrite(db)
	}
	if err != nil {
		return fmt.Errorf("migrate the store from format %d to %d: %w", format, formatVersion, err)
	}
	return nil
}

// beginRewrite records the current format and the rewrite's start (the first key).
func beginRewrite(meta *bbolt.Bucket) error {
	if err := meta.Put(metaMigrateChecksums, []byte{0}); err != nil {
		return err
	}
	return meta.Put(metaFormat, []byte(strconv.Itoa(formatVersion)))
}

// newerFormatError: the file was written by a newer release. Not damage: Open reports it as is.
type newerFormatError struct{ format int }

func (e *newerFormatError) Error() string {
	return fmt.Sprintf("the store has format %d, written by a newer release; this one reads format %d and older (see docs/operations.md, \"Upgrades\")", e.format, formatVersion)
}

// readFormat is the file's format: 0 for a file without buckets (new), 1 for one without a
// recorded format or that a release of format 2 left migrating from it. A file this release
// is rewriting says 3 (finishRewrite goes on with it).
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

// finishRewrite rewrites what is left of a file whose rewrite to the current format began
// (the progress marker is set): the events from the marker on, then format 1's buckets (gone
// from a file of format 2), and drops the markers.
func finishRewrite(db *bbolt.DB) error {
	var rewriting bool
	_ = db.View(func(tx *bbolt.Tx) error {
		rewriting = tx.Bucket(bucketMeta).Get(metaMigrateChecksums) != nil
		return nil
	})
	if !rewriting {
		return nil
	}
	if err := rewriteLegacyEvents(db); err != nil {
		return fmt.Errorf("events: %w", err)
	}
	for _, move := range [][2][]byte{{format1ProviderState, bucketProviderState}, {format1Outbox, bucketOutbox}, {format1OutboxFailed, bucketOutboxFailed}} {
		if err := moveBucket(db, move[0], move[1]); err != nil {
			return fmt.Errorf("move %s to %s: %w", move[0], move[1], err)
		}
	}
	return db.Update(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if err := meta.Delete(format1MigrateEvents); err != nil {
			return err
		}
		return meta.Delete(metaMigrateChecksums)
	})
}

// rewriteLegacyEvents gives every event from the progress marker on the value of the current
// format, migrateChunk events a transaction, and moves the marker past them in the same
// transaction.
func rewriteLegacyEvents(db *bbolt.DB) error {
	for {
		done := false
		err := db.Update(func(tx *bbolt.Tx) error {
			meta, events := tx.Bucket(bucketMeta), tx.Bucket(bucketEvents)
			events.FillPercent = 0.9
			type kv struct{ k, v []byte }
			var chunk []kv
			c := events.Cursor()
			k, v := c.Seek(meta.Get(metaMigrateChecksums))
			for ; k != nil && len(chunk) < migrateChunk; k, v = c.Next() {
				chunk = append(chunk, kv{bytes.Clone(k), legacyEventValue(k, v)})
			}
			for _, e := range chunk {
				if err := events.Put(e.k, e.v); err != nil {
					return err
				}
			}
			if k == nil {
				done = true
				return nil // finishRewrite drops the marker once the buckets are moved too
			}
			return meta.Put(metaMigrateChecksums, bytes.Clone(k))
		})
		if err != nil || done {
			return err
		}
	}
}

// legacyEventValue is the current value of the event stored under k with value v of format 1
// (the JSON alone) or 2 (the type's length, the type, the JSON). A format-1 value is a JSON
// object and begins with '{' (123); a format-2 value begins with the length of a type, far
// shorter. An event that fails store.LegacyEvent keeps its bytes behind an empty type: reads
// report it as undecodable, as they do any event whose check fails.
func legacyEventValue(k, v []byte) []byte {
	var seq int64
	if len(k) > 8 {
		seq = int64(binary.BigEndian.Uint64(k[len(k)-8:]))
	}
	typ, hasType, raw := []byte(nil), false, v
	if len(v) > 0 && v[0] != '{' && 1+int(v[0]) <= len(v) {
		n := 1 + int(v[0])
		typ, hasType, raw = v[1:n], true, v[n:]
	}
	e, err := store.LegacyEvent(seq, typ, hasType, raw)
	if err != nil {
		e = store.Event{Sequence: seq, JSON: v}
	}
	return appendEventValue(make([]byte, 0, eventValueLen(e)), e)
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
