//go:build linux

package backend_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/internal/testutil"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The store's disk fills up while executions run (a real 8 MiB tmpfs, no injected fault): they
// are stopped, and once space is freed each ends with exactly one run.failed, without a
// restart; their streams end, cancel answers, new executions run, and a restart finds the same
// logs.
func TestStrandedOnAFullDisk(t *testing.T) {
	disk := testutil.MountTmpfs(t, "8m", "TestStrandedOnAFullDisk ./backend/")
	ballast := filepath.Join(disk, "ballast")
	testutil.FillFile(t, ballast, 5<<20) // leaves the store about 3 MiB
	dir := filepath.Join(disk, "store")
	steady := newSteadyProvider(16 << 10)
	opts := backend.Options{Providers: []backend.Provider{steady.provider(), mock.New()}}
	rt := openRuntime(t, dir, opts)
	conv := newConversation(t, rt)
	ids := make([]string, 4)
	for i := range ids {
		ids[i] = start(t, rt, conv, startOpts{provider: "steady"}).ID
	}
	streams := followAll(t, rt, ids)

	steady.waitStopped(t, ids...) // each stops once the full disk refuses one of its changes
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		wantStoreFailure(t, rt, id, <-streams[i])
	}
	for _, id := range ids {
		exec, err := rt.CancelExecution(ctxT(t), id, nil)
		if err != nil || exec.State != api.ExecutionStateFailed {
			t.Fatalf("cancel after space was freed answered %s, %v; want the failed execution", exec.State, err)
		}
	}
	exec := start(t, rt, conv, startOpts{input: "after the disk filled"})
	if events, final := finalOf(t, rt, exec.ID); final.State != api.ExecutionStateSucceeded {
		t.Fatalf("execution after the disk filled: %s %v", final.State, types(events))
	}

	logs := storedLogs(t, rt, ids)
	rt.Close()
	reopened := openRuntime(t, dir, opts)
	if again := storedLogs(t, reopened, ids); !mapsEqual(logs, again) {
		t.Fatal("the logs changed across a restart: recovery found an execution unfinished")
	}
}
