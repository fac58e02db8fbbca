package bolt_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend/store/bolt"
	"github.com/harness-edge/harness-edge/backend/store/storetest"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// migrateChildEnv names the store directory a child process opens (migrating it) and closes;
// see TestMain.
const migrateChildEnv = "HARNESS_BOLT_MIGRATE_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(migrateChildEnv); dir != "" {
		s, err := bolt.Open(dir, bolt.Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := s.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// bulkEvents is how many old-format events the crash test adds to the fixture: several of the
// migration's transactions (migrateChunk events each), so that kills land between them.
const bulkEvents = 150_000

// bulkExecution owns the added events (it has no record: the events bucket does not care).
const bulkExecution = "exec_0000000000000000000000000000b01c"

// TestKilledMigrationResumes: a process killed (SIGKILL) while it rewrites a store of format 1
// or 2 leaves a file the next Open goes on migrating, and nothing is lost or changed: the
// fixture's records and every event read back as written. Kills land at increasing delays
// after the start of a child that opens the store; at least one must find the rewrite of the
// events half done (format 3 recorded, the progress marker set), else the test proves nothing.
// (A kill, not a power cut: what the kernel was handed survives, as in backend's crash test.)
func TestKilledMigrationResumes(t *testing.T) {
	for _, c := range []struct {
		format  int
		fixture string
	}{{1, format1Fixture}, {2, format2Fixture}} {
		t.Run(fmt.Sprintf("format %d", c.format), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, bolt.FileName)
			copyFile(t, c.fixture, path)
			addOldEvents(t, path, c.format, bulkEvents)

			midway := 0
			// Each kill keeps what the child committed, so the next child resumes further on.
			for delay := 10 * time.Millisecond; delay <= 3*time.Second; delay = delay * 7 / 5 {
				delay = delay.Round(time.Millisecond)
				exited := killMigrationAfter(t, dir, delay)
				format, marker := migrationState(t, path)
				t.Logf("killed after %v: exited on its own %v, format %q, events marker set %v", delay, exited, format, marker)
				if format == "3" && marker {
					midway++
				}
				if exited || (format == "3" && !marker) {
					break // migrated before the kill: later kills would find nothing to interrupt
				}
			}
			if midway == 0 {
				t.Fatal("no kill interrupted the rewrite of the events (see the log above): raise bulkEvents so that it takes longer")
			}

			s, err := bolt.Open(dir, bolt.Options{})
			if err != nil {
				t.Fatalf("open after the kills: %v", err)
			}
			checkMigratedStore(t, s, bulkEvents)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if format, marker := migrationState(t, path); format != "3" || marker {
				t.Fatalf("after the last open: format %q, events marker set %v", format, marker)
			}
		})
	}
}

// checkMigratedStore reads back the fixture and the n added events.
func checkMigratedStore(t *testing.T, s *bolt.Store, n int) {
	t.Helper()
	storetest.CheckFixture(t, s)
	events, err := s.Events(bulkExecution, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != n {
		t.Fatalf("%d of the %d added events read back", len(events), n)
	}
	for i, e := range events {
		seq := int64(i + 1)
		if e.Sequence != seq || e.Type != api.StandardEventTypeOutputTextDelta || string(e.JSON) != string(bulkEventJSON(seq)) {
			t.Fatalf("event %d read back as %d %s %s", seq, e.Sequence, e.Type, e.JSON)
		}
	}
}

// addOldEvents writes n events into a file of format 1 or 2 the way that format
// stored them: the wire JSON alone (1), after the type's length and the type (2).
func addOldEvents(t *testing.T, path string, format, n int) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		events := tx.Bucket([]byte("events"))
		events.FillPercent = 0.9
		for seq := int64(1); seq <= int64(n); seq++ {
			key := binary.BigEndian.AppendUint64([]byte(bulkExecution), uint64(seq))
			if err := events.Put(key, oldEventValue(format, api.StandardEventTypeOutputTextDelta, bulkEventJSON(seq))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// oldEventValue is an event's value as format 1 or 2 stored it.
func oldEventValue(format int, typ api.StandardEventType, raw []byte) []byte {
	if format == 1 {
		return raw
	}
	return append(append([]byte{byte(len(typ))}, typ...), raw...)
}

func bulkEventJSON(seq int64) []byte {
	return fmt.Appendf(nil, `{"data":{"text":"word %d "},"executionId":%q,"id":"%s:%d","sequence":%d,"time":"2026-11-01T09:00:00.000Z","type":"output.text.delta"}`,
		seq, bulkExecution, bulkExecution, seq, seq)
}

// killMigrationAfter starts a child that opens the store in dir and kills it with SIGKILL after
// delay; it reports whether the child had exited on its own before (the migration finished).
func killMigrationAfter(t *testing.T, dir string, delay time.Duration) (exited bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), migrateChildEnv+"="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the migrating child failed: %v: %s", err, stderr.String())
		}
		return true
	case <-time.After(delay):
		_ = cmd.Process.Kill()
		<-done
		return false
	}
}

// migrationState reads the format recorded in the file and whether the events rewrite's
// progress marker is set, without migrating (a read-only bbolt open).
func migrationState(t *testing.T, path string) (format string, marker bool) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_ = db.View(func(tx *bbolt.Tx) error {
		if meta := tx.Bucket([]byte("meta")); meta != nil {
			format = string(meta.Get([]byte("format")))
			marker = meta.Get([]byte("migrate.checksums")) != nil
		}
		return nil
	})
	return format, marker
}
