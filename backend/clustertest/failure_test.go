package clustertest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/postgres"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The owner stops without finishing its execution (Close leaves it unfinished, as a killed
// process does) and does not come back: once its lease expired, the other node fails the
// execution with exactly one run.failed naming the node, a subscriber there sees it, the
// pending action answers ACTION_NOT_FOUND (also to a response that was waiting for the dead
// owner), and a cancel that was waiting for the dead owner answers with the failed execution.
func TestOwnerStopsAndItsLeaseIsTakenOver(t *testing.T) {
	nodes := startCluster(t, clusterOpts{}, "a", "b")
	a, b := nodes[0], nodes[1]
	conv := newConversation(t, a)
	exec := start(t, a, mockRequest(conv, "orphan", api.JSONObject{"requireApproval": true}))
	actionID := approvalAction(t, b, exec.ID)

	streamed := make(chan []backend.Event, 1)
	go func() { streamed <- follow(t, b, exec.ID, 0) }()
	if err := a.rt.Close(); err != nil {
		t.Fatalf("Close a: %v", err)
	}
	// Posted to the dead owner: nobody will run them; the takeover answers them.
	cancelled := make(chan api.Execution, 1)
	go func() {
		got, err := b.rt.CancelExecution(ctxT(t), exec.ID, nil)
		if err != nil {
			t.Errorf("CancelExecution on b: %v", err)
		}
		cancelled <- got
	}()
	responded := make(chan error, 1)
	go func() {
		_, err := b.rt.RespondToAction(ctxT(t), exec.ID, actionID, approve(true))
		responded <- err
	}()

	events := <-streamed
	checkComplete(t, "stream on b", events)
	last, err := events[len(events)-1].Decode()
	if err != nil {
		t.Fatal(err)
	}
	wantMessage := "Node a stopped before the execution finished"
	if last.Type != api.StandardEventTypeRunFailed || !strings.Contains(string(events[len(events)-1].JSON), wantMessage) {
		t.Fatalf("last event %s, want run.failed with %q", events[len(events)-1].JSON, wantMessage)
	}
	failures := 0
	for _, e := range events {
		if e.Type == api.StandardEventTypeRunFailed {
			failures++
		}
	}
	if failures != 1 {
		t.Fatalf("%d run.failed: %s", failures, typesOf(events))
	}
	got := <-cancelled
	if got.State != api.ExecutionStateFailed || got.Error == nil || got.Error.Code != string(backend.CodeProviderError) || got.Error.Message != wantMessage {
		t.Fatalf("cancel answered %s %+v", got.State, got.Error)
	}
	wantCode(t, <-responded, backend.CodeActionNotFound)
	_, err = b.rt.RespondToAction(ctxT(t), exec.ID, actionID, approve(true))
	wantCode(t, err, backend.CodeActionNotFound)
}

// quietStore drops every notice of the store: a listener that lost its connection for good.
type quietStore struct{ *postgres.Store }

func (quietStore) Watch(func(store.Notice)) (stop func()) { return func() {} }

// Without a single notice, a node still follows another node's execution, cancels through it
// and answers its actions: the poll only delays.
func TestMissedNoticesOnlyDelay(t *testing.T) {
	a := startCluster(t, clusterOpts{}, "a")[0]
	dsn := a.dsn
	b := openNode(t, dsn, "b", clusterOpts{
		wrap: func(s *postgres.Store) store.Store { return quietStore{s} },
		poll: 100 * time.Millisecond,
	})
	conv := newConversation(t, a)
	words := make([]string, 20)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	exec := start(t, a, mockRequest(conv, strings.Join(words, " "), api.JSONObject{"requireApproval": true, "delayMs": 5}))

	streamed := make(chan []backend.Event, 1)
	go func() { streamed <- follow(t, b, exec.ID, 0) }()
	actionID := approvalAction(t, b, exec.ID)
	if _, err := b.rt.RespondToAction(ctxT(t), exec.ID, actionID, approve(true)); err != nil {
		t.Fatalf("RespondToAction on b: %v", err)
	}
	onB := <-streamed
	checkComplete(t, "stream on b", onB)
	sameLog(t, "replay on a", onB, follow(t, a, exec.ID, 0))

	p := start(t, a, mockRequest(conv, "wait", api.JSONObject{"requireApproval": true}))
	approvalAction(t, b, p.ID)
	got, err := b.rt.CancelExecution(ctxT(t), p.ID, nil)
	if err != nil || got.State != api.ExecutionStateCancelled {
		t.Fatalf("CancelExecution on b = %s, %v", got.State, err)
	}
}

// unreachableLease is a store whose lease renewals fail once cut is set: a node cut off from
// the database while its executions run.
type unreachableLease struct {
	*postgres.Store
	cut *atomic.Bool
}

func (s unreachableLease) RenewLease(ctx context.Context, epoch int64, ttl time.Duration) error {
	if s.cut.Load() {
		return errors.New("connection refused (test)")
	}
	return s.Store.RenewLease(ctx, epoch, ttl)
}

// cuttableCluster starts node b, then node a on the same database, both with the blocking
// provider and the mock; a's lease renewals fail while cut is set (unreachableLease). log, when
// not nil, is a's runtime logger.
func cuttableCluster(t *testing.T, log *slog.Logger) (a, b *node, p *blocker, cut *atomic.Bool) {
	t.Helper()
	p = &blocker{}
	providers := func() []backend.Provider { return []backend.Provider{p, mock.New()} }
	b = startCluster(t, clusterOpts{providers: providers}, "b")[0]
	cut = &atomic.Bool{}
	a = openNode(t, b.dsn, "a", clusterOpts{
		providers: providers,
		wrap:      func(s *postgres.Store) store.Store { return unreachableLease{s, cut} },
		log:       log,
	})
	return a, b, p, cut
}

// A node that cannot renew its lease is claimed by the other node once the lease expired,
// which fails its execution: exactly one run.failed naming the node, the stopped provider's
// cleanup hook is not called (nobody cancelled). Meanwhile the cut-off node refuses new work
// (UNAVAILABLE, not ready), ends its stream of the execution (lapse_test.go) and no longer
// answers from its memory: it reads the failed record like any other node. When it reaches the
// store again, it learns it was claimed (fenced): its provider stops, and it takes a new epoch
// and serves again.
func TestNodeThatLosesItsLeaseStopsItsExecutions(t *testing.T) {
	a, b, p, cut := cuttableCluster(t, nil)
	conv := newConversation(t, a)
	exec := start(t, a, api.StartExecutionRequest{ConversationID: conv, ProviderID: blockerID, Input: "x"})
	waitForEvent(t, b, exec.ID, api.StandardEventTypeOutputTextDelta)
	streamEnded := make(chan error, 1)
	go func() {
		for _, err := range backend.FollowExecution(ctxT(t), a.rt, exec.ID, 0) {
			if err != nil {
				streamEnded <- err
				return
			}
		}
		streamEnded <- nil
	}()

	cut.Store(true)
	events := follow(t, b, exec.ID, 0)
	checkComplete(t, "log on b", events)
	wantMessage := "Node a stopped before the execution finished"
	if last := events[len(events)-1]; last.Type != api.StandardEventTypeRunFailed || !strings.Contains(string(last.JSON), wantMessage) {
		t.Fatalf("log on b: %s; last %s", typesOf(events), last.JSON)
	}
	onA, err := a.rt.GetExecution(ctxT(t), exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if onA.State != api.ExecutionStateFailed || onA.Error == nil || onA.Error.Message != wantMessage {
		t.Fatalf("a still answers %s %+v", onA.State, onA.Error)
	}
	if n := p.cancels.Load(); n != 0 {
		t.Fatalf("cleanup hook called %d times", n)
	}
	replay, _, err := a.rt.ListEvents(ctxT(t), exec.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	sameLog(t, "log on a", events, replay)
	_, _, err = a.rt.StartExecution(ctxT(t), api.StartExecutionRequest{ConversationID: conv, ProviderID: blockerID, Input: "refused"})
	wantCode(t, err, backend.CodeUnavailable)
	wantCode(t, a.rt.Ready(ctxT(t)), backend.CodeUnavailable)

	select {
	case err := <-streamEnded:
		wantCode(t, err, backend.CodeUnavailable)
	case <-time.After(testTimeout):
		t.Fatal("a's stream of the claimed execution did not end while a could not vouch for its lease")
	}

	cut.Store(false)
	waitReady(t, a)
	again := start(t, a, mockRequest(conv, "again", nil))
	if got := follow(t, a, again.ID, 0); got[len(got)-1].Type != api.StandardEventTypeRunCompleted {
		t.Fatalf("a new execution on a after its new epoch: %s", typesOf(got))
	}
	if got := follow(t, b, exec.ID, 0); len(got) != len(events) {
		t.Fatalf("the claimed execution's log changed after a came back: %s", typesOf(got))
	}
}

// waitReady waits until n is ready again (a hang guard, not a timing assertion).
func waitReady(t *testing.T, n *node) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for n.rt.Ready(ctxT(t)) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("node %s is still not ready: %v", n.name, n.rt.Ready(ctxT(t)))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// reattacher is a provider whose work outlives the node that started it (as the remote
// provider's upstream execution does): Run waits, Resume finishes.
type reattacher struct{ resumes atomic.Int64 }

const reattacherID = "reattacher"

func (p *reattacher) Manifest() api.ProviderManifest {
	m := (&blocker{}).Manifest()
	m.ID, m.Name = reattacherID, "Re-attaches after a failover"
	return m
}

func (p *reattacher) Run(ctx context.Context, run *backend.Run) (backend.Result, error) {
	if err := run.EmitText("started"); err != nil {
		return backend.Result{}, err
	}
	<-ctx.Done()
	return backend.Result{}, context.Cause(ctx)
}

func (p *reattacher) Resume(ctx context.Context, run *backend.Run) (backend.Result, error) {
	p.resumes.Add(1)
	if err := run.EmitText(" resumed"); err != nil {
		return backend.Result{}, err
	}
	if run.Input() == "wait" {
		<-ctx.Done()
		return backend.Result{}, context.Cause(ctx)
	}
	return backend.Result{FinalOutput: "started resumed"}, nil
}

// An execution whose provider can re-attach is not failed when its node stops: the node that
// takes the lease over resumes it, once, and it completes there; commands from any node reach
// it there.
func TestTakeoverResumesWhatCanReattach(t *testing.T) {
	p := &reattacher{}
	nodes := startCluster(t, clusterOpts{providers: func() []backend.Provider { return []backend.Provider{p} }}, "a", "b")
	a, b := nodes[0], nodes[1]
	conv := newConversation(t, a)
	exec := start(t, a, api.StartExecutionRequest{ConversationID: conv, ProviderID: reattacherID, Input: "x"})
	waiting := start(t, a, api.StartExecutionRequest{ConversationID: conv, ProviderID: reattacherID, Input: "wait"})
	cancelledEarly := start(t, a, api.StartExecutionRequest{ConversationID: conv, ProviderID: reattacherID, Input: "wait"})
	for _, id := range []string{exec.ID, waiting.ID, cancelledEarly.ID} {
		waitForEvent(t, b, id, api.StandardEventTypeOutputTextDelta)
	}
	if err := a.rt.Close(); err != nil {
		t.Fatal(err)
	}
	// Posted to a, which is gone: once b resumed the execution, the waiting cancel asks b.
	early := make(chan api.Execution, 1)
	go func() {
		got, err := b.rt.CancelExecution(ctxT(t), cancelledEarly.ID, nil)
		if err != nil {
			t.Errorf("CancelExecution on b before the takeover: %v", err)
		}
		early <- got
	}()
	events := follow(t, b, exec.ID, 0)
	checkComplete(t, "log on b", events)
	want := []api.StandardEventType{
		api.StandardEventTypeRunQueued, api.StandardEventTypeRunStarted, api.StandardEventTypeOutputTextDelta,
		api.StandardEventTypeOutputTextDelta, api.StandardEventTypeOutputTextDone, api.StandardEventTypeRunCompleted,
	}
	if len(events) != len(want) {
		t.Fatalf("log on b: %s", typesOf(events))
	}
	for i, e := range events {
		if e.Type != want[i] {
			t.Fatalf("log on b: %s", typesOf(events))
		}
	}
	got, err := b.rt.GetExecution(ctxT(t), exec.ID)
	if err != nil || got.State != api.ExecutionStateSucceeded || *got.FinalOutput != "started resumed" {
		t.Fatalf("GetExecution on b = %+v, %v", got, err)
	}

	// The other one now runs on b: a cancel arriving at a third node reaches it there.
	c := openNode(t, a.dsn, "c", clusterOpts{providers: func() []backend.Provider { return []backend.Provider{p} }})
	waitForEvent(t, c, waiting.ID, api.StandardEventTypeOutputTextDelta)
	for e, err := range backend.FollowExecution(ctxT(t), c.rt, waiting.ID, 0) { // until the resumed delta
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(e.JSON), "resumed") {
			break
		}
	}
	cancelled, err := c.rt.CancelExecution(ctxT(t), waiting.ID, nil)
	if err != nil || cancelled.State != api.ExecutionStateCancelled {
		t.Fatalf("CancelExecution on c = %s, %v", cancelled.State, err)
	}
	if got := <-early; got.State != api.ExecutionStateCancelled {
		t.Fatalf("the cancel posted before the takeover answered %s", got.State)
	}
	if n := p.resumes.Load(); n != 3 {
		t.Fatalf("resumed %d times, want 3 (one per execution)", n)
	}
}

// staleWalk is a store whose walk over executions hands back records as they were read
// before: the restart recovery of a node that read its leftovers just before another node
// took them over.
type staleWalk struct {
	*postgres.Store
	stale store.Execution
}

func (s staleWalk) ForEachExecution(visit func(store.Execution) bool, undecodable func(string, error)) error {
	return s.Store.ForEachExecution(func(rec store.Execution) bool {
		if rec.Execution.ID == s.stale.Execution.ID {
			rec = s.stale
		}
		return visit(rec)
	}, undecodable)
}

// A node restarting under its name while another node takes its leftovers over: its recovery
// collides with the takeover's run.failed, finds the execution failed already and starts; the
// log keeps exactly one run.failed.
func TestRestartRecoveryThatCollidesWithATakeoverStarts(t *testing.T) {
	p := &blocker{}
	providers := func() []backend.Provider { return []backend.Provider{p} }
	nodes := startCluster(t, clusterOpts{providers: providers}, "a", "b")
	a, b := nodes[0], nodes[1]
	conv := newConversation(t, a)
	exec := start(t, a, api.StartExecutionRequest{ConversationID: conv, ProviderID: blockerID, Input: "x"})
	waitForEvent(t, b, exec.ID, api.StandardEventTypeOutputTextDelta)
	ctx := ctxT(t)
	reader, err := postgres.Open(ctx, postgres.Config{DSN: a.dsn, Node: "reader"})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	stale, _, err := reader.Execution(exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.rt.Close(); err != nil {
		t.Fatal(err)
	}
	events := follow(t, b, exec.ID, 0) // b took a's lease over
	checkComplete(t, "log", events)

	again := openNode(t, a.dsn, "a", clusterOpts{
		providers: providers,
		wrap:      func(s *postgres.Store) store.Store { return staleWalk{s, stale} },
	})
	sameLog(t, "log after the restart", events, follow(t, again, exec.ID, 0))
}

// catchAllOnly turns every notice into the catch-all a store sends after its listener
// reconnected (no execution, no command named).
type catchAllOnly struct{ *postgres.Store }

func (s catchAllOnly) Watch(fn func(store.Notice)) (stop func()) {
	return s.Store.Watch(func(n store.Notice) { fn(store.Notice{Kind: n.Kind}) })
}

// A catch-all notice wakes every waiter: with the poll out of the picture (an hour), a node
// that only ever gets catch-alls still streams, cancels and answers actions.
func TestCatchAllNoticesWakeEveryWaiter(t *testing.T) {
	a := startCluster(t, clusterOpts{}, "a")[0]
	b := openNode(t, a.dsn, "b", clusterOpts{
		wrap: func(s *postgres.Store) store.Store { return catchAllOnly{s} },
		poll: time.Hour,
	})
	conv := newConversation(t, a)
	exec := start(t, a, mockRequest(conv, "one two three", api.JSONObject{"requireApproval": true}))
	streamed := make(chan []backend.Event, 1)
	go func() { streamed <- follow(t, b, exec.ID, 0) }()
	actionID := approvalAction(t, b, exec.ID)
	if _, err := b.rt.RespondToAction(ctxT(t), exec.ID, actionID, approve(true)); err != nil {
		t.Fatalf("RespondToAction on b: %v", err)
	}
	checkComplete(t, "stream on b", <-streamed)

	waiting := start(t, a, mockRequest(conv, "wait", api.JSONObject{"requireApproval": true}))
	approvalAction(t, b, waiting.ID)
	got, err := b.rt.CancelExecution(ctxT(t), waiting.ID, nil)
	if err != nil || got.State != api.ExecutionStateCancelled {
		t.Fatalf("CancelExecution on b = %s, %v", got.State, err)
	}
}

// A node alone that cannot renew its lease for longer than the lease (a database failover
// that every node saw) refuses new work meanwhile but stops nothing: nobody claimed it, so
// once it renews again its execution goes on, and ends as its caller decides (here a cancel),
// not failed.
func TestUnclaimedLeaseOutageKeepsExecutions(t *testing.T) {
	p := &blocker{}
	cut := &atomic.Bool{}
	a := startCluster(t, clusterOpts{
		providers: func() []backend.Provider { return []backend.Provider{p, mock.New()} },
		wrap:      func(s *postgres.Store) store.Store { return unreachableLease{s, cut} },
	}, "a")[0]
	conv := newConversation(t, a)
	exec := start(t, a, api.StartExecutionRequest{ConversationID: conv, ProviderID: blockerID, Input: "x"})
	waitForEvent(t, a, exec.ID, api.StandardEventTypeOutputTextDelta)

	cut.Store(true)
	// Not ready from the first unanswered renewal; starts are refused once the lease lapsed.
	deadline := time.Now().Add(testTimeout)
	for {
		_, _, err := a.rt.StartExecution(ctxT(t), mockRequest(conv, "again", nil))
		if err != nil {
			wantCode(t, err, backend.CodeUnavailable)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a still accepts starts long after its renewals stopped")
		}
		time.Sleep(20 * time.Millisecond)
	}
	wantCode(t, a.rt.Ready(ctxT(t)), backend.CodeUnavailable)
	onA, err := a.rt.GetExecution(ctxT(t), exec.ID) // from the store: it cannot vouch for memory
	if err != nil || onA.State != api.ExecutionStateRunning {
		t.Fatalf("GetExecution while unsure = %s, %v; want running", onA.State, err)
	}

	cut.Store(false)
	waitReady(t, a)
	got, err := a.rt.CancelExecution(ctxT(t), exec.ID, nil)
	if err != nil || got.State != api.ExecutionStateCancelled {
		t.Fatalf("CancelExecution after the outage = %s, %v; want cancelled (the execution went on)", got.State, err)
	}
	events := follow(t, a, exec.ID, 0)
	checkComplete(t, "log", events)
	for _, e := range events {
		if e.Type == api.StandardEventTypeRunFailed {
			t.Fatalf("the execution failed across an outage nobody claimed: %s", typesOf(events))
		}
	}
}
