//go:build fixture

package bolt_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/harness-edge/harness-edge/backend/store/bolt"
	"github.com/harness-edge/harness-edge/backend/store/storetest"
)

// TestWriteUpgradeFixture writes the fixture with the code it runs: set
// HARNESS_WRITE_FIXTURE=testdata/formatN.db to record a release's format. It is how
// testdata/format1.db was made; it builds only with -tags fixture.
func TestWriteUpgradeFixture(t *testing.T) {
	out := os.Getenv("HARNESS_WRITE_FIXTURE")
	if out == "" {
		t.Fatal("set HARNESS_WRITE_FIXTURE to the file to write (docs/storage.md)")
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
