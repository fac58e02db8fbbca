package backend_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// errDiskFull is what a write to a full disk fails with.
var errDiskFull = &os.PathError{Op: "write", Path: "harness.db", Err: syscall.ENOSPC}

// steadyProvider emits a delta of size bytes every millisecond until an emission is refused or
// its context ends, and reports when each run starts and returns.
type steadyProvider struct {
	size    int
	started chan string // execution ids
	stopped chan string
}

func newSteadyProvider(size int) *steadyProvider {
	return &steadyProvider{size: size, started: make(chan string, 256), stopped: make(chan string, 256)}
}

func (p *steadyProvider) provider() backend.Provider {
	text := strings.Repeat("x", p.size)
	return &scripted{id: "steady", run: func(ctx context.Context, run *backend.Run) (backend.Result, error) {
		p.started <- run.ExecutionID()
		defer func() { p.stopped <- run.ExecutionID() }()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			if err := run.EmitText(text); err != nil {
				return backend.Result{}, err
			}
			select {
			case <-tick.C:
			case <-ctx.Done():
			}
		}
		return backend.Result{}, context.Cause(ctx)
	}}
}

// waitStopped waits until the runs of ids have all returned.
func (p *steadyProvider) waitStopped(t *testing.T, ids ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	ctx := ctxT(t)
	for len(want) > 0 {
		select {
		case id := <-p.stopped:
			delete(want, id)
		case <-ctx.Done():
			t.Fatalf("providers of %v still running", want)
		}
	}
}

// followed is what a subscriber saw, from the first event to the end of its stream.
type followed struct {
	events []api.RuntimeEvent
	err    error
}

// followAll follows each execution from the start in its own goroutine.
func followAll(t *testing.T, rt *backend.Runtime, ids []string) []chan followed {
	out := make([]chan followed, len(ids))
	for i, id := range ids {
		out[i] = make(chan followed, 1)
		go func() {
			var f followed
			for e, err := range backend.FollowExecution(ctxT(t), rt, id, 0) {
				if err != nil {
					f.err = err
					break
				}
				re, err := e.Decode()
				if err != nil {
					f.err = err
					break
				}
				f.events = append(f.events, re)
			}
			out[i] <- f
		}()
	}
	return out
}

// waitForEvents waits until the execution has published at least n events.
func waitForEvents(t *testing.T, rt *backend.Runtime, id string, n int) {
	t.Helper()
	seen := 0
	for _, err := range backend.FollowExecution(ctxT(t), rt, id, 0) {
		if err != nil {
			t.Fatalf("Follow %s: %v", id, err)
		}
		if seen++; seen >= n {
			return
		}
	}
	t.Fatalf("execution %s ended after %d events", id, seen)
}

// wantStoreFailure asserts what every stranded execution ends with: a complete log whose last
// event is the one run.failed saying the store refused its changes, and that the subscriber saw
// exactly what the store holds (nothing uncommitted, nothing lost).
func wantStoreFailure(t *testing.T, rt *backend.Runtime, id string, f followed) {
	t.Helper()
	if f.err != nil {
		t.Fatalf("stream of %s: %v", id, f.err)
	}
	exec := getExecution(t, rt, id)
	checkLog(t, exec, f.events)
	if exec.State != api.ExecutionStateFailed || exec.Error == nil || exec.Error.Code != "PROVIDER_ERROR" || exec.Error.Message != backend.MsgNotStored {
		t.Fatalf("%s: state %s error %+v, want failed %q", id, exec.State, exec.Error, backend.MsgNotStored)
	}
	if last := f.events[len(f.events)-1]; typed(last.Data.AsRunFailedData()).Message != backend.MsgNotStored {
		t.Fatalf("run.failed data %v", last.Data)
	}
	stored, _, err := rt.ListEvents(ctxT(t), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != len(f.events) {
		t.Fatalf("%s: the stream saw %d events, the store holds %d", id, len(f.events), len(stored))
	}
}

// storedLogs reads every execution's log as raw JSON.
func storedLogs(t *testing.T, rt *backend.Runtime, ids []string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, id := range ids {
		events, _, err := rt.ListEvents(ctxT(t), id, 0, 0)
		if err != nil {
			t.Fatalf("ListEvents %s: %v", id, err)
		}
		for _, e := range events {
			out[id] = append(out[id], string(e.JSON))
		}
	}
	return out
}

// Executions running while the store refuses writes (a full disk) are stopped at once and,
// once it accepts writes again, end with exactly one run.failed each, without a restart: their
// streams end, cancellation works during the failure (it waits for that outcome instead of
// answering 500) and after it, and a restart finds exactly the same logs.
func TestStrandedExecutionsFailOnceTheStoreAcceptsWrites(t *testing.T) {
	dir := t.TempDir()
	steady := newSteadyProvider(64)
	rt := openRuntime(t, dir, backend.Options{Providers: []backend.Provider{steady.provider(), mock.New()}})
	conv := newConversation(t, rt)
	ids := make([]string, 5)
	for i := range ids {
		ids[i] = start(t, rt, conv, startOpts{provider: "steady"}).ID
		waitForEvents(t, rt, ids[i], 3)
	}
	streams := followAll(t, rt, ids)

	backend.FailWrites(rt, errDiskFull)
	steady.waitStopped(t, ids...)
	for _, id := range ids {
		if state := getExecution(t, rt, id).State; state != api.ExecutionStateRunning {
			t.Fatalf("%s reads %s while its failure is not durable, want running (the durable state)", id, state)
		}
	}
	_, _, err := rt.StartExecution(ctxT(t), startReq(conv, startOpts{provider: "steady"}))
	wantCode(t, err, backend.CodeInternal, "")

	// A cancellation during the failure neither answers 500 nor ends the execution with a
	// state that is not durable: it waits for the failure the execution is owed.
	short, cancel := context.WithTimeout(ctxT(t), 50*time.Millisecond) // the store refuses every write meanwhile
	_, err = rt.CancelExecution(short, ids[0], nil)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancel during the failure: %v, want it to wait (context deadline)", err)
	}
	type cancelled struct {
		exec api.Execution
		err  error
	}
	during := make(chan cancelled, 1)
	go func() {
		exec, err := rt.CancelExecution(ctxT(t), ids[0], nil)
		during <- cancelled{exec, err}
	}()

	backend.FailWrites(rt, nil)
	for i, id := range ids {
		wantStoreFailure(t, rt, id, <-streams[i])
	}
	c := <-during
	if c.err != nil || c.exec.State != api.ExecutionStateFailed {
		t.Fatalf("cancel during the failure answered %s, %v; want the failed execution", c.exec.State, c.err)
	}
	after, err := rt.CancelExecution(ctxT(t), ids[1], nil)
	if err != nil || after.State != api.ExecutionStateFailed {
		t.Fatalf("cancel after the failure answered %s, %v; want the failed execution", after.State, err)
	}
	if exec := start(t, rt, conv, startOpts{}); exec.State != api.ExecutionStateQueued {
		t.Fatalf("start after the failure: %s", exec.State)
	}

	logs := storedLogs(t, rt, ids)
	rt.Close()
	reopened := openRuntime(t, dir, backend.Options{Providers: []backend.Provider{steady.provider(), mock.New()}})
	if again := storedLogs(t, reopened, ids); !mapsEqual(logs, again) {
		t.Fatal("the logs changed across a restart: recovery found an execution unfinished")
	}
}

func mapsEqual(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// A start the store refuses answers an error and leaves nothing behind: its provider, if it
// began, is stopped, and the execution never exists for any reader.
func TestStartRefusedByTheStoreStopsItsProvider(t *testing.T) {
	dir := t.TempDir()
	steady := newSteadyProvider(8)
	rt := openRuntime(t, dir, backend.Options{Providers: []backend.Provider{steady.provider(), mock.New()}})
	conv := newConversation(t, rt)
	backend.FailWrites(rt, errDiskFull)
	for range 20 {
		_, _, err := rt.StartExecution(ctxT(t), startReq(conv, startOpts{provider: "steady"}))
		wantCode(t, err, backend.CodeInternal, "")
	}
	// Providers that began (they may run while the record's commit is in flight) stop.
	var began []string
	for len(steady.started) > 0 {
		began = append(began, <-steady.started)
	}
	steady.waitStopped(t, began...)
	backend.FailWrites(rt, nil)
	if exec := start(t, rt, conv, startOpts{}); exec.State != api.ExecutionStateQueued {
		t.Fatalf("start after the failure: %s", exec.State)
	}
	ids, err := backend.ExecutionIDs(rt)
	if err != nil || len(ids) != 1 {
		t.Fatalf("executions in the store: %v (%v), want only the one started after the failure", ids, err)
	}
	for _, id := range began {
		if _, err := rt.GetExecution(ctxT(t), id); backend.ErrorCode(err) != backend.CodeNotFound {
			t.Fatalf("refused start %s: %v, want NOT_FOUND", id, err)
		}
	}
}

// An execution waiting for an action is quiet while the store refuses writes; the first change
// the store refuses (here the answer to its action) strands it. The answer reports the error,
// a cancellation joins the failure, and once writes succeed the action is abandoned.
func TestActionAnswerRefusedByTheStore(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	conv := newConversation(t, rt)
	exec := start(t, rt, conv, startOpts{input: "hello", config: api.JSONObject{"requireApproval": true}})
	required := waitForEvent(t, rt, exec.ID, api.StandardEventTypeActionRequired)
	actionID := typed(required.Data.AsActionRequest()).ID
	streams := followAll(t, rt, []string{exec.ID})

	backend.FailWrites(rt, errDiskFull)
	approve := func() (api.ActionResponse, error) {
		yes := true
		return api.ActionResponse{Approved: &yes}, nil
	}
	_, err := rt.RespondToAction(ctxT(t), exec.ID, actionID, approve)
	wantCode(t, err, backend.CodeInternal, "")
	if state := getExecution(t, rt, exec.ID).State; state != api.ExecutionStateAwaitingApproval {
		t.Fatalf("state %s after the refused answer, want awaiting_approval (the durable state)", state)
	}
	var wg sync.WaitGroup
	var cancelled api.Execution
	var cancelErr error
	wg.Go(func() { cancelled, cancelErr = rt.CancelExecution(ctxT(t), exec.ID, nil) })

	backend.FailWrites(rt, nil)
	wantStoreFailure(t, rt, exec.ID, <-streams[0])
	wg.Wait()
	if cancelErr != nil || cancelled.State != api.ExecutionStateFailed {
		t.Fatalf("cancel answered %s, %v; want the failed execution", cancelled.State, cancelErr)
	}
	_, err = rt.RespondToAction(ctxT(t), exec.ID, actionID, approve)
	wantCode(t, err, backend.CodeActionNotFound, "")
}

// recordingHandler keeps every log record.
type recordingHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler            { return h }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}

func (h *recordingHandler) errors() []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []slog.Record
	for _, r := range h.records {
		if r.Level >= slog.LevelError {
			out = append(out, r)
		}
	}
	return out
}

func recordAttr(r slog.Record, key string) (slog.Value, bool) {
	var v slog.Value
	found := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v, found = a.Value, true
			return false
		}
		return true
	})
	return v, found
}

// A full disk fails every change of every running execution; the log says so once per burst
// with a count, not once per change: here 20 executions are stranded by the same error, and
// the log has one line for it plus a summary of the repeats.
func TestStoreErrorsAreLoggedOncePerBurst(t *testing.T) {
	logs := &recordingHandler{}
	steady := newSteadyProvider(64)
	began := time.Now()
	rt := openRuntime(t, "", backend.Options{Providers: []backend.Provider{steady.provider()}, Logger: slog.New(logs)})
	conv := newConversation(t, rt)
	ids := make([]string, 20)
	for i := range ids {
		ids[i] = start(t, rt, conv, startOpts{provider: "steady"}).ID
		waitForEvents(t, rt, ids[i], 2)
	}
	streams := followAll(t, rt, ids)
	backend.FailWrites(rt, errDiskFull)
	steady.waitStopped(t, ids...)
	backend.FailWrites(rt, nil)
	for i, id := range ids {
		wantStoreFailure(t, rt, id, <-streams[i])
	}
	rt.Close() // reports the repeats counted so far
	windows := 1 + int(time.Since(began)/backend.StoreErrorLogWindow)

	lines := map[string]int{} // message → lines
	stranded := 0             // executions the log accounts for
	for _, r := range logs.errors() {
		msg := strings.TrimSuffix(r.Message, " (repeated)")
		lines[msg]++
		if !strings.HasPrefix(msg, "store refused an execution's changes") {
			continue
		}
		if n, ok := recordAttr(r, "repeats"); ok {
			stranded += int(n.Int64())
		} else {
			stranded++
		}
	}
	for msg, n := range lines {
		if n > 1+windows {
			t.Fatalf("%d lines of %q in %d log windows: want one, then one summary per window", n, msg, windows)
		}
	}
	if stranded != len(ids) {
		t.Fatalf("the log accounts for %d stranded executions, want %d: %v", stranded, len(ids), lines)
	}
}

// Closing the runtime while the store still refuses writes answers the cancellations waiting
// for stranded executions, and the next Open fails those executions as any unfinished one.
func TestCloseAnswersCancellationsOfStrandedExecutions(t *testing.T) {
	dir := t.TempDir()
	rt := openRuntime(t, dir, optsNone())
	conv := newConversation(t, rt)
	exec := start(t, rt, conv, startOpts{input: "hello", config: api.JSONObject{"requireApproval": true}})
	waitForEvent(t, rt, exec.ID, api.StandardEventTypeActionRequired)

	backend.FailWrites(rt, errDiskFull)
	waiting := make(chan error, 1)
	go func() {
		_, err := rt.CancelExecution(ctxT(t), exec.ID, nil) // strands it: the store refuses cancelling
		waiting <- err
	}()
	short, cancel := context.WithTimeout(ctxT(t), 50*time.Millisecond)
	_, err := rt.CancelExecution(short, exec.ID, nil)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancel while the store refuses writes: %v, want it to wait", err)
	}
	rt.Close()
	if err := <-waiting; !errors.Is(err, backend.ErrClosed) {
		t.Fatalf("cancellation waiting at Close: %v, want ErrClosed", err)
	}
	reopened := openRuntime(t, dir, optsNone())
	wantFailed(t, reopened, exec.ID, "Runtime restarted before the execution finished")
}
