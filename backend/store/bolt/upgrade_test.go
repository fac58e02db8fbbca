package bolt_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/harness-edge/harness-edge/backend/store/bolt"
	"github.com/harness-edge/harness-edge/backend/store/storetest"
)

// format1Fixture is a store written by the release before format version 2 (storetest's
// upgrade fixture, written by TestWriteUpgradeFixture at that release and committed).
const format1Fixture = "testdata/format1.db"

// TestWriteUpgradeFixture writes the fixture with the code it runs: set
// HARNESS_WRITE_FIXTURE=testdata/formatN.db to record a release's format. It is how
// testdata/format1.db was made; it is not run otherwise.
func TestWriteUpgradeFixture(t *testing.T) {
	out := os.Getenv("HARNESS_WRITE_FIXTURE")
	if out == "" {
		t.Skip("writes a fixture only when HARNESS_WRITE_FIXTURE names the file to write")
	}
	dir := t.TempDir()
	s, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	storetest.WriteFixture(t, s)
	storetest.CheckFixture(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join(dir, bolt.FileName), out)
}

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
