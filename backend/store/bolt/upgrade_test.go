package bolt_test

import (
	"errors"
	"io"
	"strings"
	"time"

	bbolt "go.etcd.io/bbolt"

	"os"
	"path/filepath"
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"

	"github.com/harness-edge/harness-edge/backend/store/bolt"
	"github.com/harness-edge/harness-edge/backend/store/storetest"
)

// format1Fixture is a store written by the release before format version 2 (storetest's
// upgrade fixture, written by TestWriteUpgradeFixture at that release and committed).
const format1Fixture = "testdata/format1.db"

// TestOpenFormat1Store: a store written by the previous release opens (migrating it to the
// current format) and every record reads back as it was written, also after a second open.
func TestOpenFormat1Store(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, format1Fixture, filepath.Join(dir, bolt.FileName))
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
	// Rewritten once: format 2 is recorded and format 1's buckets are gone.
	db, err := bbolt.Open(filepath.Join(dir, bolt.FileName), 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket([]byte("meta")).Get([]byte("format")); string(v) != "2" {
			t.Errorf("format %q, want 2", v)
		}
		for _, old := range []string{"providerState", "webhookOutbox", "webhookFailed"} {
			if tx.Bucket([]byte(old)) != nil {
				t.Errorf("format 1's bucket %s is still there", old)
			}
		}
		return nil
	})
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
	db.Update(func(tx *bbolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("format"), []byte("3")) })
	db.Close()
	_, err = bolt.Open(dir, bolt.Options{})
	if err == nil || errors.Is(err, store.ErrDamaged) || !strings.Contains(err.Error(), "newer release") {
		t.Fatalf("Open of a format-3 file: %v", err)
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
