package backend_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// asTenant is a test context acting as tenant id with at most maxRunning running executions.
func asTenant(t testing.TB, id string, maxRunning int) context.Context {
	return backend.WithTenant(ctxT(t), backend.Tenant{ID: id, MaxRunning: maxRunning})
}

func conversationAs(t testing.TB, ctx context.Context, rt *backend.Runtime) string {
	t.Helper()
	c, err := rt.CreateConversation(ctx, nil)
	if err != nil {
		t.Fatalf("CreateConversation: %v", err)
	}
	return c.ID
}

func startAs(t testing.TB, ctx context.Context, rt *backend.Runtime, conv string, o startOpts) api.Execution {
	t.Helper()
	exec, _, err := rt.StartExecution(ctx, startReq(conv, o))
	if err != nil {
		t.Fatalf("StartExecution: %v", err)
	}
	return exec
}

// pendingActionAs waits (as ctx's tenant) for the execution's action.required and returns the
// action id.
func pendingActionAs(t testing.TB, ctx context.Context, rt *backend.Runtime, execID string) string {
	t.Helper()
	for e, err := range backend.FollowExecution(ctx, rt, execID, 0) {
		if err != nil {
			t.Fatalf("Follow: %v", err)
		}
		if e.Type == api.StandardEventTypeActionRequired {
			id := typed(decode(t, e).Data.AsActionRequest()).ID
			return id
		}
	}
	t.Fatalf("execution %s ended without action.required", execID)
	return ""
}

// waitTerminalAs follows the execution to its terminal event, as ctx's tenant.
func waitTerminalAs(t testing.TB, ctx context.Context, rt *backend.Runtime, execID string) api.RuntimeEvent {
	t.Helper()
	var last backend.Event
	for e, err := range backend.FollowExecution(ctx, rt, execID, 0) {
		if err != nil {
			t.Fatalf("Follow: %v", err)
		}
		last = e
	}
	if !last.Terminal() {
		t.Fatalf("execution %s: the log ended with %s", execID, last.Type)
	}
	return decode(t, last)
}

var needsApproval = startOpts{input: "alice secret task", config: api.JSONObject{"requireApproval": true}}

// errorsOf runs every by-id operation of the runtime on execution id (and conversation conv)
// as ctx's tenant and returns what each answered, in a fixed order.
func errorsOf(ctx context.Context, rt *backend.Runtime, conv, id, actionID string) []error {
	var errs []error
	_, err := rt.GetConversation(ctx, conv)
	errs = append(errs, err)
	_, _, err = rt.StartExecution(ctx, startReq(conv, startOpts{input: "intrude"}))
	errs = append(errs, err)
	_, err = rt.GetExecution(ctx, id)
	errs = append(errs, err)
	_, _, err = rt.ListEvents(ctx, id, 0, 0)
	errs = append(errs, err)
	_, err = rt.OpenStream(ctx, backend.StreamRequest{ExecutionID: id, After: 0})
	errs = append(errs, err)
	_, err = rt.ListArtifacts(ctx, id)
	errs = append(errs, err)
	_, err = rt.RespondToAction(ctx, id, actionID, approve(true))
	errs = append(errs, err)
	reason := "intruder"
	_, err = rt.CancelExecution(ctx, id, &reason)
	errs = append(errs, err)
	return errs
}

// wantLikeUnknown asserts that the errors got for another tenant's objects are exactly the
// NOT_FOUND errors an unknown conversation and execution give, message included.
func wantLikeUnknown(t *testing.T, got []error, conv, id string) {
	t.Helper()
	want := []string{"Conversation not found: " + conv, "Conversation not found: " + conv}
	for range 6 {
		want = append(want, "Execution not found: "+id)
	}
	if len(got) != len(want) {
		t.Fatalf("%d answers, want %d", len(got), len(want))
	}
	for i, err := range got {
		var e *backend.Error
		if !errors.As(err, &e) || e.Code != backend.CodeNotFound || e.Message != want[i] || e.Details != nil {
			t.Errorf("operation %d answered %v, want NOT_FOUND %q", i, err, want[i])
		}
	}
}

// TestAnotherTenantGetsWhatAnUnknownIDGets runs every operation by id as bob and as the
// anonymous tenant on alice's conversation and execution — while it waits for approval, and
// after it ended — and compares the answers with those for ids that do not exist: the same
// code and message. Bob's cancel and respond change nothing of alice's.
func TestAnotherTenantGetsWhatAnUnknownIDGets(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	alice, bob, anonymous := asTenant(t, "alice", 0), asTenant(t, "bob", 0), ctxT(t)
	conv := conversationAs(t, alice, rt)
	exec := startAs(t, alice, rt, conv, needsApproval)
	actionID := pendingActionAs(t, alice, rt, exec.ID)

	const unknownConv, unknownExec = "conv_00000000000000000000000000000000", "exec_00000000000000000000000000000000"
	wantLikeUnknown(t, errorsOf(bob, rt, unknownConv, unknownExec, actionID), unknownConv, unknownExec)
	for name, ctx := range map[string]context.Context{"bob": bob, "anonymous": anonymous} {
		t.Run(name+"/live", func(t *testing.T) {
			wantLikeUnknown(t, errorsOf(ctx, rt, conv, exec.ID, actionID), conv, exec.ID)
		})
	}
	if got, err := rt.GetExecution(alice, exec.ID); err != nil || got.State != api.ExecutionStateAwaitingApproval {
		t.Fatalf("alice's execution after bob's attempts: %v, %+v", err, got)
	}

	// Alice answers her action; then the finished execution (from the cache of finished
	// logs, and from the store once a reopen emptied it) is just as hidden.
	if _, err := rt.RespondToAction(alice, exec.ID, actionID, approve(true)); err != nil {
		t.Fatalf("alice's own respond: %v", err)
	}
	if last := waitTerminalAs(t, alice, rt, exec.ID); last.Type != api.StandardEventTypeRunCompleted {
		t.Fatalf("alice's execution ended with %s", last.Type)
	}
	t.Run("bob/finished", func(t *testing.T) {
		wantLikeUnknown(t, errorsOf(bob, rt, conv, exec.ID, actionID), conv, exec.ID)
	})
}

// TestForeignActionIDIsAnUnknownActionID: alice answering, on her own execution, an action id
// of bob's gets exactly what an action id that never existed gets.
func TestForeignActionIDIsAnUnknownActionID(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	alice, bob := asTenant(t, "alice", 0), asTenant(t, "bob", 0)
	aliceExec := startAs(t, alice, rt, conversationAs(t, alice, rt), needsApproval)
	pendingActionAs(t, alice, rt, aliceExec.ID)
	bobExec := startAs(t, bob, rt, conversationAs(t, bob, rt), needsApproval)
	bobAction := pendingActionAs(t, bob, rt, bobExec.ID)

	_, err := rt.RespondToAction(alice, aliceExec.ID, bobAction, approve(true))
	wantCode(t, err, backend.CodeActionNotFound, "Action not found: "+bobAction)
	const unknown = "action_00000000000000000000000000000000"
	_, err = rt.RespondToAction(alice, aliceExec.ID, unknown, approve(true))
	wantCode(t, err, backend.CodeActionNotFound, "Action not found: "+unknown)
	if got, err := rt.GetExecution(bob, bobExec.ID); err != nil || got.State != api.ExecutionStateAwaitingApproval {
		t.Fatalf("bob's execution after alice's attempt: %v, %+v", err, got)
	}
}

// TestTenantSurvivesReopen: ownership is durable. After a restart (alice's finished execution
// read from the store, her unfinished one failed by recovery), bob still gets NOT_FOUND and
// alice still reads both, replays her idempotency key and — the slot of the recovered
// execution being free — starts again under a limit of one.
func TestTenantSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	rt := openRuntime(t, dir, optsNone())
	alice := asTenant(t, "alice", 1)
	conv := conversationAs(t, alice, rt)
	keyed := startOpts{input: "once", key: "order-42"}
	done := startAs(t, alice, rt, conv, keyed)
	waitTerminalAs(t, alice, rt, done.ID)
	waiting := startAs(t, alice, rt, conv, needsApproval)
	actionID := pendingActionAs(t, alice, rt, waiting.ID)
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}

	rt = openRuntime(t, dir, optsNone())
	bob := asTenant(t, "bob", 1)
	for _, id := range []string{done.ID, waiting.ID} {
		wantLikeUnknown(t, errorsOf(bob, rt, conv, id, actionID), conv, id)
	}
	if got, err := rt.GetExecution(alice, waiting.ID); err != nil || got.State != api.ExecutionStateFailed {
		t.Fatalf("alice's unfinished execution after the restart: %v, %+v", err, got)
	}
	replay, replayed, err := rt.StartExecution(alice, startReq(conv, keyed))
	if err != nil || !replayed || replay.ID != done.ID {
		t.Fatalf("alice's replay after the restart: %v, replayed %v, id %s want %s", err, replayed, replay.ID, done.ID)
	}
	again := startAs(t, alice, rt, conv, needsApproval) // the limit of one is free again
	if _, _, err := rt.StartExecution(alice, startReq(conv, needsApproval)); backend.ErrorCode(err) != backend.CodeRateLimited {
		t.Fatalf("a second running execution under a limit of one: %v", err)
	}
	reason := "done"
	if _, err := rt.CancelExecution(alice, again.ID, &reason); err != nil {
		t.Fatal(err)
	}
}

// TestMaxRunningIsPerTenantAndFreedByEveryEnd: two running executions fill alice's limit; the
// third start is refused with RATE_LIMITED (bob and the anonymous tenant are not affected), an
// idempotent replay is still answered, and each way an execution ends — cancelled, failed
// (denied), succeeded (approved) — frees its slot by the time its terminal event is visible.
func TestMaxRunningIsPerTenantAndFreedByEveryEnd(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	alice := asTenant(t, "alice", 2)
	conv := conversationAs(t, alice, rt)
	keyed := needsApproval
	keyed.key = "first"
	first := startAs(t, alice, rt, conv, keyed)
	second := startAs(t, alice, rt, conv, needsApproval)

	refuse := func(when string) {
		t.Helper()
		_, _, err := rt.StartExecution(alice, startReq(conv, needsApproval))
		if backend.ErrorCode(err) != backend.CodeRateLimited {
			t.Fatalf("%s: a third start answered %v, want RATE_LIMITED", when, err)
		}
		wantCode(t, err, backend.CodeRateLimited, "Too many executions running at once (at most 2); retry when one has finished")
	}
	refuse("two running")
	if replay, replayed, err := rt.StartExecution(alice, startReq(conv, keyed)); err != nil || !replayed || replay.ID != first.ID {
		t.Fatalf("idempotent replay at the limit: %v, replayed %v", err, replayed)
	}
	for _, other := range []context.Context{asTenant(t, "bob", 2), backend.WithTenant(ctxT(t), backend.Tenant{MaxRunning: 2})} {
		c := conversationAs(t, other, rt)
		startAs(t, other, rt, c, needsApproval)
		startAs(t, other, rt, c, needsApproval)
	}

	// Cancelled.
	if _, err := rt.CancelExecution(alice, first.ID, nil); err != nil {
		t.Fatal(err)
	}
	third := startAs(t, alice, rt, conv, needsApproval)
	refuse("after a cancel and a new start")

	// Failed: the mock fails when its approval is denied.
	if _, err := rt.RespondToAction(alice, second.ID, pendingActionAs(t, alice, rt, second.ID), approve(false)); err != nil {
		t.Fatal(err)
	}
	if last := waitTerminalAs(t, alice, rt, second.ID); last.Type != api.StandardEventTypeRunFailed {
		t.Fatalf("denied execution ended with %s", last.Type)
	}
	startAs(t, alice, rt, conv, needsApproval) // at once: the terminal event was visible
	refuse("after a failure and a new start")

	// Succeeded.
	if _, err := rt.RespondToAction(alice, third.ID, pendingActionAs(t, alice, rt, third.ID), approve(true)); err != nil {
		t.Fatal(err)
	}
	if last := waitTerminalAs(t, alice, rt, third.ID); last.Type != api.StandardEventTypeRunCompleted {
		t.Fatalf("approved execution ended with %s", last.Type)
	}
	startAs(t, alice, rt, conv, needsApproval)
	refuse("after a success and a new start")
}

// TestMaxRunningUnderConcurrentStarts: many concurrent starts of one tenant, exactly the limit
// succeed; the rest are refused with RATE_LIMITED.
func TestMaxRunningUnderConcurrentStarts(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	const limit, attempts = 3, 24
	alice := asTenant(t, "alice", limit)
	conv := conversationAs(t, alice, rt)
	var wg sync.WaitGroup
	results := make(chan error, attempts)
	for range attempts {
		wg.Go(func() {
			_, _, err := rt.StartExecution(alice, startReq(conv, needsApproval))
			results <- err
		})
	}
	wg.Wait()
	close(results)
	started, limited := 0, 0
	for err := range results {
		switch {
		case err == nil:
			started++
		case backend.ErrorCode(err) == backend.CodeRateLimited:
			limited++
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if started != limit || limited != attempts-limit {
		t.Fatalf("%d started and %d refused, want %d and %d", started, limited, limit, attempts-limit)
	}
}

// TestTenantContext: the zero context is the anonymous, unbounded tenant.
func TestTenantContext(t *testing.T) {
	if got := backend.TenantFrom(context.Background()); !reflect.DeepEqual(got, backend.Tenant{}) {
		t.Fatalf("tenant of a bare context: %+v", got)
	}
	want := backend.Tenant{ID: "alice", MaxRunning: 3}
	if got := backend.TenantFrom(backend.WithTenant(context.Background(), want)); got != want {
		t.Fatalf("tenant %+v, want %+v", got, want)
	}
}
