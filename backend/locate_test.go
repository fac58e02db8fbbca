package backend_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/cluster"
	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/bolt"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// sharedBolt is a bbolt store that claims to be shared by several nodes: it adds only the
// Owner semantics of store.Cluster (Node) to the real store, and a lease that always renews
// and never expires, so the runtime's handling of executions owned by another node can be
// tested without PostgreSQL. Commands cannot travel through it (clustertest runs them on a
// real PostgreSQL).
type sharedBolt struct {
	*bolt.Store
	node string
	// hideIdempotency, when set, makes the next idempotency lookup miss once: the lookup of a
	// start that raced another node's start of the same key.
	hideIdempotency atomic.Bool
}

func (s *sharedBolt) Node() string                                               { return s.node }
func (s *sharedBolt) Watch(func(store.Notice)) func()                            { return func() {} }
func (s *sharedBolt) AcquireLease(context.Context, time.Duration) (int64, error) { return 1, nil }
func (s *sharedBolt) RenewLease(context.Context, int64, time.Duration) error     { return nil }
func (s *sharedBolt) ClaimExpired(context.Context) ([]store.Execution, error) {
	return nil, nil
}
func (s *sharedBolt) OwnedUnfinished(context.Context) ([]store.Execution, error) {
	return nil, nil
}
func (s *sharedBolt) PostCommand(context.Context, store.Command) (int64, error) {
	return 0, errors.ErrUnsupported
}
func (s *sharedBolt) PendingCommands(context.Context) ([]store.Command, error) {
	return nil, nil
}
func (s *sharedBolt) AnswerCommand(context.Context, int64, []byte) error {
	return errors.ErrUnsupported
}
func (s *sharedBolt) CommandResult(context.Context, int64) ([]byte, bool, error) {
	return nil, false, errors.ErrUnsupported
}

func (s *sharedBolt) Idempotency(tenant, conversationID, key string) (store.Idempotency, bool, error) {
	if s.hideIdempotency.CompareAndSwap(true, false) {
		return store.Idempotency{}, false, nil
	}
	return s.Store.Idempotency(tenant, conversationID, key)
}

var _ store.Cluster = (*sharedBolt)(nil)

func openShared(t *testing.T, dir, node string, p backend.Provider) (*backend.Runtime, *sharedBolt) {
	t.Helper()
	st, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	shared := &sharedBolt{Store: st, node: node}
	rt, err := backend.Open(backend.Options{Store: shared, Node: node, Providers: []backend.Provider{p}, Cluster: cluster.New(shared, cluster.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	return rt, shared
}

// On a store shared by several nodes, an unfinished execution of another node is that node's:
// Open does not fail it, reads of what is committed work, a subscription follows the store,
// a response is checked against the store before anything travels, and what needs the running
// node goes to it as a command (which this store cannot carry: an internal error here). This
// node's own leftovers are failed as on bbolt, and the executions it starts record it as their
// owner.
func TestExecutionOfAnotherNode(t *testing.T) {
	dir := t.TempDir()
	blocking := &scripted{id: "blocking", run: blockUntilCancelled}
	rtB, _ := openShared(t, dir, "node-b", blocking)
	conv := newConversation(t, rtB)
	ofB := start(t, rtB, conv, startOpts{provider: "blocking", input: "x"})
	rtB.Close() // node-b "stops": its execution stays unfinished in the store
	rtA, _ := openShared(t, dir, "node-a", blocking)
	ofA := start(t, rtA, conv, startOpts{provider: "blocking", input: "x"})
	rtA.Close()

	rt, shared := openShared(t, dir, "node-a", blocking)
	defer rt.Close()
	wantFailed(t, rt, ofA.ID, "Runtime restarted before the execution finished")
	exec, err := rt.GetExecution(ctxT(t), ofB.ID)
	if err != nil || exec.State == api.ExecutionStateFailed || exec.State == api.ExecutionStateCancelled || exec.State == api.ExecutionStateSucceeded {
		t.Fatalf("node-b's execution: %s, %v; want it left unfinished (its node's business)", exec.State, err)
	}
	events, _, err := rt.ListEvents(ctxT(t), ofB.ID, 0, 0)
	if err != nil || len(events) == 0 || events[0].Type != api.StandardEventTypeRunQueued {
		t.Fatalf("node-b's committed events: %d, %v", len(events), err)
	}
	if _, err := rt.ListArtifacts(ctxT(t), ofB.ID); err != nil {
		t.Fatalf("node-b's artifacts: %v", err)
	}
	_, cancelErr := rt.CancelExecution(ctxT(t), ofB.ID, nil)
	var e *backend.Error
	if !errors.As(cancelErr, &e) || e.Code != backend.CodeInternal || !errors.Is(cancelErr, errors.ErrUnsupported) {
		t.Errorf("cancel of node-b's execution: %v; want INTERNAL_ERROR from posting the command", cancelErr)
	}
	_, respondErr := rt.RespondToAction(ctxT(t), ofB.ID, "act_0123456789abcdef0123456789abcdef", nil)
	wantCode(t, respondErr, backend.CodeActionNotFound, "Action not found: act_0123456789abcdef0123456789abcdef")
	sub, err := rt.OpenStream(context.Background(), backend.StreamRequest{ExecutionID: ofB.ID, After: 0})
	if err != nil {
		t.Fatalf("subscribe to node-b's execution: %v", err)
	}
	var followed []backend.Event
	for len(followed) < len(events) {
		<-sub.Ready()
		more, done, err := sub.Read(0)
		if err != nil || done {
			t.Fatalf("node-b's execution followed from the store: %v (done %v) after %d events", err, done, len(followed))
		}
		followed = append(followed, more...)
	}
	sub.Close()
	if len(followed) != len(events) || followed[0].Type != api.StandardEventTypeRunQueued {
		t.Fatalf("node-b's execution followed from the store: %d events; want its %d committed events", len(followed), len(events))
	}
	if rec, _, _ := shared.Execution(ofB.ID); rec.Owner != "node-b" {
		t.Fatalf("node-b's record has owner %q", rec.Owner)
	}
	mine := start(t, rt, conv, startOpts{provider: "blocking", input: "y"})
	if rec, _, _ := shared.Execution(mine.ID); rec.Owner != "node-a" {
		t.Fatalf("a new execution's owner is %q, want node-a", rec.Owner)
	}
}

// A single-node store records no owner: bbolt records stay as they were.
func TestSingleNodeRecordsHaveNoOwner(t *testing.T) {
	dir := t.TempDir()
	rt := openRuntime(t, dir, backend.Options{Node: "node-a"})
	exec := start(t, rt, newConversation(t, rt), startOpts{input: "hi"})
	finalOf(t, rt, exec.ID)
	rt.Close()
	st, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if rec, found, err := st.Execution(exec.ID); err != nil || !found || rec.Owner != "" {
		t.Fatalf("record %+v (found %v, %v); want no owner", rec, found, err)
	}
}

// Two nodes start the same idempotent request at once: the in-process lock cannot see the
// other node, so both find no record, and the store refuses the second binding (ErrConflict).
// That start answers as a replay of the first one, and stores nothing of its own.
func TestIdempotentStartLosingTheStoreRace(t *testing.T) {
	rt, shared := openShared(t, t.TempDir(), "node-a", &scripted{id: "blocking", run: blockUntilCancelled})
	defer rt.Close()
	conv := newConversation(t, rt)
	first, replayed, err := rt.StartExecution(ctxT(t), startReq(conv, startOpts{provider: "blocking", input: "x", key: "k"}))
	if err != nil || replayed {
		t.Fatalf("first start: %v (replayed %v)", err, replayed)
	}
	shared.hideIdempotency.Store(true) // the second start's lookup misses, as if it ran on another node at the same time
	second, replayed, err := rt.StartExecution(ctxT(t), startReq(conv, startOpts{provider: "blocking", input: "x", key: "k"}))
	if err != nil || !replayed || second.ID != first.ID {
		t.Fatalf("second start: %s, replayed %v, %v; want a replay of %s", second.ID, replayed, err, first.ID)
	}
	if shared.hideIdempotency.Load() {
		t.Fatal("the lookup was not made; the test proves nothing")
	}
	page, err := rt.ListExecutions(ctxT(t), backend.ExecutionFilter{})
	if err != nil || len(page.Executions) != 1 {
		t.Fatalf("executions stored: %d (%v), want only the first", len(page.Executions), err)
	}
	// A different request under the taken key is still a conflict.
	shared.hideIdempotency.Store(true)
	_, _, err = rt.StartExecution(ctxT(t), startReq(conv, startOpts{provider: "blocking", input: "other", key: "k"}))
	wantCode(t, err, backend.CodeIdempotencyConflict, "Idempotency key was already used with a different execution request")
}

// startHook is a bbolt store that lets a test act at the moment an execution's start is
// durable, before the runtime has been told (its commit's Done has not run).
type startHook struct {
	*bolt.Store
	onStart   func(id string)      // called once, in the start commit's Done, before the runtime's
	submitted chan store.Execution // the cancelling records submitted
	armed     atomic.Bool
}

func (s *startHook) Submit(req *store.Request) error {
	b := req.Batch
	if len(b.Executions) == 1 && b.Executions[0].Execution.State == api.ExecutionStateQueued && s.armed.CompareAndSwap(true, false) {
		id, done := b.Executions[0].Execution.ID, outcomeOf(req)
		req.Settler, req.Done = nil, func(err error) {
			if err == nil {
				s.onStart(id)
			}
			done(err)
		}
	} else if len(b.Executions) > 0 && b.Executions[0].Execution.State == api.ExecutionStateCancelling {
		select {
		case s.submitted <- b.Executions[0]:
		default:
		}
	}
	return s.Store.Submit(req)
}

// outcomeOf is what the store tells req's submitter, as one function (its Settler, else its
// Done), for a test store that wraps it.
func outcomeOf(req *store.Request) func(error) {
	if req.Settler != nil {
		return req.Settler.Settled
	}
	return req.Done
}

// An execution is live before its start can be seen: a cancel that finds the committed record
// in the instant before the start is answered cancels the execution, instead of answering the
// queued record as if it were finished (stored ⇒ terminal).
func TestCancelTheInstantTheStartIsDurable(t *testing.T) {
	st, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hook := &startHook{Store: st, submitted: make(chan store.Execution, 16)}
	rt, err := backend.Open(backend.Options{Store: hook, Providers: []backend.Provider{&scripted{id: "blocking", run: blockUntilCancelled}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	conv := newConversation(t, rt)
	type answer struct {
		exec api.Execution
		err  error
	}
	cancelled := make(chan answer, 1)
	hook.onStart = func(id string) {
		go func() {
			exec, err := rt.CancelExecution(ctxT(t), id, nil)
			cancelled <- answer{exec, err}
		}()
		// Hold the start's Done until the cancel either answered or submitted its change (which
		// commits only after this returns): either way it located the execution in this instant.
		select {
		case a := <-cancelled:
			cancelled <- a
		case <-hook.submitted:
		case <-time.After(testTimeout):
			t.Error("the cancel neither answered nor submitted anything")
		}
	}
	hook.armed.Store(true)
	exec := start(t, rt, conv, startOpts{provider: "blocking", input: "x"})
	if hook.armed.Load() {
		t.Fatal("the start's commit was not seen; the test proves nothing")
	}
	a := <-cancelled
	if a.err != nil || a.exec.State != api.ExecutionStateCancelled {
		t.Fatalf("cancel in the instant the start was durable: %s, %v; want cancelled", a.exec.State, a.err)
	}
	if got := getExecution(t, rt, exec.ID); got.State != api.ExecutionStateCancelled {
		t.Fatalf("the execution is %s after the cancel", got.State)
	}
}
