package bolt_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/bolt"
	"github.com/harness-edge/harness-edge/backend/store/storetest"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// format1Fixture and format2Fixture are stores written by the releases of formats 1 and 2
// (storetest's upgrade fixture, written by TestWriteUpgradeFixture at that release and
// committed).
const (
	format1Fixture = "testdata/format1.db"
	format2Fixture = "testdata/format2.db"
)

// TestOpenOlderFormatStores: a store written by an older release opens (migrating it to the
// current format) and every record reads back as it was written, also after a second open.
func TestOpenOlderFormatStores(t *testing.T) {
	for _, fixture := range []string{format1Fixture, format2Fixture} {
		t.Run(fixture, func(t *testing.T) {
			dir := t.TempDir()
			copyFile(t, fixture, filepath.Join(dir, bolt.FileName))
			for range 2 {
				s, err := bolt.Open(dir, bolt.Options{})
				if err != nil {
					t.Fatal(err)
				}
				storetest.CheckFixture(t, s)
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			// Rewritten once: format 3 is recorded, no migration marker is left, and format
			// 1's buckets are gone.
			db, err := bbolt.Open(filepath.Join(dir, bolt.FileName), 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			db.View(func(tx *bbolt.Tx) error {
				meta := tx.Bucket([]byte("meta"))
				if v := meta.Get([]byte("format")); string(v) != "3" {
					t.Errorf("format %q, want 3", v)
				}
				for _, marker := range []string{"migrate.checksums", "migrate.events"} {
					if meta.Get([]byte(marker)) != nil {
						t.Errorf("the marker %s is left", marker)
					}
				}
				for _, old := range []string{"providerState", "webhookOutbox", "webhookFailed"} {
					if tx.Bucket([]byte(old)) != nil {
						t.Errorf("format 1's bucket %s is still there", old)
					}
				}
				return nil
			})
		})
	}
}

// Issue 34: the migration to format 3 checks every old event in full, once, before it gives
// it a checksum. An event damaged before the upgrade — a byte changed in its middle, a byte
// that is not UTF-8, a type beside it that is not the one in it — stays undecodable after it
// (its execution's reads answer ErrUndecodable); every other event is served, checked by its
// checksum from then on.
func TestMigrationChecksEveryOldEvent(t *testing.T) {
	for _, format := range []int{1, 2} {
		t.Run(fmt.Sprintf("format %d", format), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, bolt.FileName)
			copyFile(t, map[int]string{1: format1Fixture, 2: format2Fixture}[format], path)
			delta := api.StandardEventTypeOutputTextDelta
			healthy := oldExecution{id: "exec_00000000000000000000000000000e01", typ: delta}
			quote := oldExecution{id: "exec_00000000000000000000000000000e02", typ: delta,
				damage: func(raw []byte) []byte { return bytes.Replace(raw, []byte(`"},`), []byte(`X},`), 1) }}
			utf8 := oldExecution{id: "exec_00000000000000000000000000000e03", typ: delta,
				damage: func(raw []byte) []byte { return bytes.Replace(raw, []byte("word"), []byte("w\xffrd"), 1) }}
			executions := []oldExecution{healthy, quote, utf8}
			if format == 2 {
				executions = append(executions, oldExecution{id: "exec_00000000000000000000000000000e04", typ: api.StandardEventTypeOutputTextDone})
			}
			putOldEvents(t, path, format, executions)

			s, err := bolt.Open(dir, bolt.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			storetest.CheckFixture(t, s)
			if events, err := s.Events(healthy.id, 0, 0); err != nil || len(events) != oldEvents {
				t.Fatalf("the healthy execution: %d events, %v", len(events), err)
			}
			for _, damaged := range executions[1:] {
				if events, err := s.Events(damaged.id, 0, 0); !errors.Is(err, store.ErrUndecodable) {
					t.Errorf("%s: %d events, %v; want ErrUndecodable", damaged.id, len(events), err)
				}
				// The events before the damaged one are still served.
				if events, err := s.Events(damaged.id, 0, oldEvents/2); err != nil || len(events) != oldEvents/2 {
					t.Errorf("%s before its damaged event: %d events, %v", damaged.id, len(events), err)
				}
			}
		})
	}
}

// oldEvents is how many events each oldExecution has; the one in the middle is damaged.
const oldEvents = 5

// oldExecution is an execution's log as an older format stored it, its middle event damaged
// by damage (nil: none) and stored with type typ beside it in format 2.
type oldExecution struct {
	id     string
	typ    api.StandardEventType
	damage func([]byte) []byte
}

func putOldEvents(t *testing.T, path string, format int, executions []oldExecution) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, x := range executions {
			for seq := int64(1); seq <= oldEvents; seq++ {
				raw := fmt.Appendf(nil, `{"data":{"text":"word %d"},"executionId":%q,"id":"%s:%d","sequence":%d,"time":"2026-11-01T09:00:00.000Z","type":"output.text.delta"}`,
					seq, x.id, x.id, seq, seq)
				typ := api.StandardEventTypeOutputTextDelta
				if seq == oldEvents/2+1 {
					typ = x.typ
					if x.damage != nil {
						d := x.damage(raw)
						if bytes.Equal(d, raw) {
							t.Fatalf("%s: the damage changed nothing", x.id)
						}
						raw = d
					}
				}
				key := binary.BigEndian.AppendUint64([]byte(x.id), uint64(seq))
				if err := tx.Bucket([]byte("events")).Put(key, oldEventValue(format, typ, raw)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A file a release of format 2 left half migrated from format 1 (killed during its rewrite:
// format "1" recorded, its buckets created, the events before its marker of format 2, the
// others of format 1) is finished by this release, every event read back as written.
func TestFinishesAFormat1RewriteAnOlderReleaseLeft(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, bolt.FileName)
	copyFile(t, format1Fixture, path)
	const n = 1000
	addOldEvents(t, path, 1, n)
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	half := binary.BigEndian.AppendUint64([]byte(bulkExecution), n/2)
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, name := range []string{"meta", "provider_state", "webhook_outbox", "webhook_failed", "executions_by_time",
			"executions_by_conversation", "index_journal"} {
			if _, err := tx.CreateBucketIfNotExists([]byte(name)); err != nil {
				return err
			}
		}
		meta := tx.Bucket([]byte("meta"))
		if err := meta.Put([]byte("format"), []byte("1")); err != nil {
			return err
		}
		if err := meta.Put([]byte("migrate.events"), half); err != nil {
			return err
		}
		// Format 2's rewrite got as far as half: everything before it is of format 2, the
		// fixture's events included.
		events := tx.Bucket([]byte("events"))
		var keys, values [][]byte
		c := events.Cursor()
		for k, v := c.First(); k != nil && bytes.Compare(k, half) < 0; k, v = c.Next() {
			var head struct {
				Type api.StandardEventType `json:"type"`
			}
			if err := json.Unmarshal(v, &head); err != nil {
				return err
			}
			keys, values = append(keys, bytes.Clone(k)), append(values, oldEventValue(2, head.Type, v))
		}
		for i := range keys {
			if err := events.Put(keys[i], values[i]); err != nil {
				return err
			}
		}
		return nil
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkMigratedStore(t, s, n)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if format, marker := migrationState(t, path); format != "3" || marker {
		t.Fatalf("format %q, events marker set %v", format, marker)
	}
}

// A file of a format newer than this release reads is refused with a message saying so, not
// as damage.
func TestOpenNewerFormatIsRefused(t *testing.T) {
	dir := t.TempDir()
	s, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := bbolt.Open(filepath.Join(dir, bolt.FileName), 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bbolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("format"), []byte("4")) })
	db.Close()
	_, err = bolt.Open(dir, bolt.Options{})
	if err == nil || errors.Is(err, store.ErrDamaged) || !strings.Contains(err.Error(), "newer release") {
		t.Fatalf("Open of a format-4 file: %v", err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
