package backend_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/backend/store/bolt"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// crashChildEnv, when set to a directory, turns the test binary into the crash-test child: it
// runs executions on that directory's store until it is killed (see TestMain).
const crashChildEnv = "HARNESS_EDGE_CRASH_CHILD_DIR"

const crashDeltas = 30

// burstProvider emits crashDeltas deltas "0".."29" as fast as the store takes them. Emit
// returns once the event is queued for the group commit, before it is durable, so the child
// acknowledges events where a caller can first observe them: on its subscription (see
// runCrashChild). The durability rule under test is that whatever is observable is committed.
type burstProvider struct{}

func (burstProvider) Manifest() api.ProviderManifest {
	m := mock.New().Manifest()
	m.ID, m.Name = "burst", "Crash Test Burst Provider"
	return m
}

func (p burstProvider) Run(ctx context.Context, run *backend.Run) (backend.Result, error) {
	for i := range crashDeltas {
		if err := run.EmitText(strconv.Itoa(i)); err != nil {
			return backend.Result{}, err
		}
		if ctx.Err() != nil {
			return backend.Result{}, ctx.Err()
		}
	}
	return backend.Result{FinalOutput: "burst"}, nil
}

type lockedWriter struct {
	mu sync.Mutex
	f  *os.File
}

func (w *lockedWriter) printf(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fmt.Fprintf(w.f, format, args...) // one write per line: a kill never leaves half of an earlier line
}

// runCrashChild never returns: four workers start executions (every fifth one is cancelled at
// once) until the parent kills the process. Every event a worker's subscription delivers is
// acknowledged on stdout ("ack <execution> <sequence>"), as is every start answered.
func runCrashChild(dir string) {
	out := &lockedWriter{f: os.Stdout}
	// With a commit linger, as the server runs by default (commit_linger): a group waits for
	// more writes, and still nothing is observable before it is durable.
	st, err := bolt.Open(dir, bolt.Options{CommitLinger: 2 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	rt, err := backend.Open(backend.Options{Store: st, Providers: []backend.Provider{burstProvider{}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	ctx := context.Background()
	conv, err := rt.CreateConversation(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "conversation:", err)
		os.Exit(2)
	}
	out.printf("ready\n")
	for w := range 4 {
		go func() {
			for n := 0; ; n++ {
				exec, _, err := rt.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "burst", Input: "x"})
				if err != nil {
					fmt.Fprintln(os.Stderr, "start:", err)
					os.Exit(2)
				}
				out.printf("ack %s 1\n", exec.ID)
				if (n+w)%5 == 0 {
					if final, err := rt.CancelExecution(ctx, exec.ID, nil); err == nil && final.State == api.ExecutionStateCancelled {
						out.printf("cancelled %s\n", exec.ID)
					}
				}
				for e, err := range backend.FollowExecution(ctx, rt, exec.ID, 0) {
					if err == nil {
						out.printf("ack %s %d\n", exec.ID, e.Sequence)
					}
				}
			}
		}()
	}
	select {}
}

// TestCrashSafety kills a child process with SIGKILL at random points while it appends, twenty
// times, on one store file. After every kill the file reopens cleanly, nothing the child
// acknowledged is lost, sequences are contiguous, and every execution is terminal with exactly
// one terminal event (completed, cancelled, or failed by recovery).
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns and kills 20 child processes; run without -short")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	acked := map[string]int64{} // execution → highest acknowledged sequence
	cancelled := map[string]bool{}
	const kills = 20
	for k := range kills {
		threshold := rng.IntN(200) // acknowledged lines to wait for before the kill
		lines := runAndKill(t, dir, threshold, time.Duration(rng.IntN(20))*time.Millisecond)
		for _, line := range lines {
			f := strings.Fields(line)
			switch {
			case len(f) == 3 && f[0] == "ack":
				seq, _ := strconv.ParseInt(f[2], 10, 64)
				acked[f[1]] = max(acked[f[1]], seq)
			case len(f) == 2 && f[0] == "cancelled":
				cancelled[f[1]] = true
			}
		}
		verifyCrashStore(t, dir, k, acked, cancelled)
	}
	if len(acked) == 0 {
		t.Fatal("the children never acknowledged anything")
	}
	t.Logf("%d kills, %d executions acknowledged", kills, len(acked))
}

// runAndKill starts the child, waits for `threshold` acknowledgements (plus a small random
// delay), kills it with SIGKILL and returns every complete line it wrote.
func runAndKill(t *testing.T, dir string, threshold int, extra time.Duration) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	var all []string
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(testTimeout)
	seen := 0
wait:
	for seen < threshold || len(all) == 0 {
		select {
		case line, ok := <-lines:
			if !ok {
				break wait // the child died on its own: stderr says why
			}
			all = append(all, line)
			if strings.HasPrefix(line, "ack ") {
				seen++
			}
		case <-deadline:
			break wait
		}
	}
	time.Sleep(extra)
	cmd.Process.Kill() // SIGKILL: no deferred code, no flush, no Close
	for line := range lines {
		all = append(all, line)
	}
	<-readDone
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(interface{ Signaled() bool }); !ok || !ws.Signaled() {
		t.Fatalf("child was not killed (err %v); stderr:\n%s", err, stderr.String())
	}
	return all
}

func verifyCrashStore(t *testing.T, dir string, kill int, acked map[string]int64, cancelled map[string]bool) {
	t.Helper()
	rt, err := local.Open(dir, backend.Options{Providers: []backend.Provider{burstProvider{}}})
	if err != nil {
		t.Fatalf("kill %d: reopen: %v", kill, err)
	}
	defer rt.Close()
	ctx := ctxT(t)
	ids, err := backend.ExecutionIDs(rt)
	if err != nil {
		t.Fatalf("kill %d: list: %v", kill, err)
	}
	known := map[string]bool{}
	for _, id := range ids {
		known[id] = true
		exec, err := rt.GetExecution(ctx, id)
		if err != nil {
			t.Fatalf("kill %d: %s: %v", kill, id, err)
		}
		events, _, err := rt.ListEvents(ctx, id, 0, 0)
		if err != nil {
			t.Fatalf("kill %d: events of %s: %v", kill, id, err)
		}
		decoded := make([]api.RuntimeEvent, len(events))
		for i, e := range events {
			decoded[i] = decode(t, e)
		}
		checkLog(t, exec, decoded) // terminal, contiguous, exactly one terminal event, last
		if want := acked[id]; int64(len(events)) < want {
			t.Fatalf("kill %d: %s has %d events, %d were acknowledged", kill, id, len(events), want)
		}
		for _, e := range decoded {
			if e.Type == api.StandardEventTypeOutputTextDelta && typed(e.Data.AsTextDeltaData()).Text != strconv.FormatInt(e.Sequence-3, 10) {
				t.Fatalf("kill %d: %s event %d has text %v", kill, id, e.Sequence, typed(e.Data.AsTextDeltaData()).Text)
			}
		}
		if cancelled[id] && exec.State != api.ExecutionStateCancelled {
			t.Fatalf("kill %d: %s acknowledged as cancelled but %s", kill, id, exec.State)
		}
		if exec.State == api.ExecutionStateFailed && exec.Error.Message != "Runtime restarted before the execution finished" {
			t.Fatalf("kill %d: %s failed with %q", kill, id, exec.Error.Message)
		}
	}
	for id := range acked {
		if !known[id] {
			t.Fatalf("kill %d: acknowledged execution %s is gone", kill, id)
		}
	}
}
