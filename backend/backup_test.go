package backend_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// acknowledged is what a caller was told before the backup began: an execution and the events
// it had read back.
type acknowledged struct {
	exec   api.Execution
	events []api.RuntimeEvent
}

// pacedWriter writes to a file and holds the first chunk back until the writers have done
// more work (or a while has passed): the backup is then certainly taken while executions run
// and commit. The wait is pacing, not an assertion.
type pacedWriter struct {
	f     *os.File
	ready <-chan struct{}
	once  sync.Once
}

func (w *pacedWriter) Write(p []byte) (int, error) {
	w.once.Do(func() {
		select {
		case <-w.ready:
		case <-time.After(2 * time.Second):
		}
	})
	return w.f.Write(p)
}

// Issue 12, item 4: an online backup of a store under write load, restored into a fresh data
// directory, holds everything acknowledged before the backup began, and the restored runtime
// serves it.
func TestBackupUnderLoadRestores(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	conv := newConversation(t, rt)

	var started atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ids []string
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				exec, _, err := rt.StartExecution(ctxT(t), startReq(conv, startOpts{
					input:  strings.Repeat(fmt.Sprintf("w%d-%d ", w, i), 20),
					config: api.JSONObject{"delayMs": 1, "artifactName": "out.txt"},
				}))
				if err != nil {
					t.Errorf("StartExecution: %v", err)
					return
				}
				mu.Lock()
				ids = append(ids, exec.ID)
				mu.Unlock()
				started.Add(1)
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()

	for started.Load() < 40 { // some history first
		time.Sleep(5 * time.Millisecond)
	}
	// What the callers were told so far: every execution acknowledged (202) and the events it
	// has now, read back from the runtime.
	mu.Lock()
	before := append([]string(nil), ids...)
	mu.Unlock()
	var acked []acknowledged
	for _, id := range before {
		exec := getExecution(t, rt, id)
		events, _, err := rt.ListEvents(ctxT(t), id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		a := acknowledged{exec: exec}
		for _, e := range events {
			a.events = append(a.events, decode(t, e))
		}
		acked = append(acked, a)
	}

	backupPath := filepath.Join(t.TempDir(), "harness.db.bak")
	f, err := os.Create(backupPath)
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	startedAtBackup := started.Load()
	go func() {
		for started.Load() < startedAtBackup+20 {
			time.Sleep(time.Millisecond)
		}
		close(ready)
	}()
	n, err := rt.Backup(&pacedWriter{f: f, ready: ready})
	if err != nil {
		t.Fatalf("Backup: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("backup: %d bytes; %d executions acknowledged before it, %d started while it ran",
		n, len(acked), started.Load()-startedAtBackup)
	if info, err := os.Stat(backupPath); err != nil || info.Size() != n {
		t.Fatalf("backup file: %v, %d bytes reported", err, n)
	}

	// Restore: a fresh data directory whose store file is the backup.
	restoredDir := t.TempDir()
	raw, err := os.ReadFile(backupPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(restoredDir, local.FileName), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	restored := openRuntime(t, restoredDir, optsNone())
	if _, err := restored.GetConversation(ctxT(t), conv); err != nil {
		t.Fatalf("conversation: %v", err)
	}
	for _, a := range acked {
		id := a.exec.ID
		exec := getExecution(t, restored, id)
		if exec.CreatedAt != a.exec.CreatedAt || exec.Input != a.exec.Input {
			t.Fatalf("execution %s differs after restore", id)
		}
		if isTerminal(a.exec.State) && jsonString(exec) != jsonString(a.exec) {
			t.Fatalf("finished execution %s changed:\n%s\n%s", id, jsonString(a.exec), jsonString(exec))
		}
		events, _, err := restored.ListEvents(ctxT(t), id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(events) < len(a.events) {
			t.Fatalf("execution %s: %d events restored, %d acknowledged", id, len(events), len(a.events))
		}
		for i, want := range a.events {
			if got := decode(t, events[i]); jsonString(got) != jsonString(want) {
				t.Fatalf("event %s:%d differs:\n%s\n%s", id, i+1, jsonString(want), jsonString(got))
			}
		}
		if !isTerminal(exec.State) {
			t.Fatalf("restored execution %s is %s: recovery should have ended it", id, exec.State)
		}
	}
	// The restored store takes new work.
	fresh := start(t, restored, conv, startOpts{input: "after restore"})
	finalOf(t, restored, fresh.ID)
}

func isTerminal(s api.ExecutionState) bool {
	return s == api.ExecutionStateSucceeded || s == api.ExecutionStateFailed || s == api.ExecutionStateCancelled
}

// Backup after Close answers ErrClosed, not a half-written file.
func TestBackupAfterClose(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	n, err := rt.Backup(&sb)
	if err != backend.ErrClosed || n != 0 || sb.Len() != 0 {
		t.Fatalf("Backup after Close: %d bytes, %v", n, err)
	}
}
