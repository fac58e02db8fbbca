package clustertest

import (
	"context"
	"fmt"
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

// Start on A, stream on B, respond on B, replay on either: B sees exactly the log A wrote,
// and B's answers are A's.
func TestStartOnOneNodeServeOnTheOther(t *testing.T) {
	nodes := startCluster(t, clusterOpts{}, "a", "b")
	a, b := nodes[0], nodes[1]
	conv := newConversation(t, a)
	exec := start(t, a, mockRequest(conv, "one two three", api.JSONObject{"requireApproval": true}))

	// B streams the live execution; the action it announces is answered on B.
	streamed := make(chan []backend.Event, 1)
	go func() { streamed <- follow(t, b, exec.ID, 0) }()
	actionID := approvalAction(t, b, exec.ID)
	got, err := b.rt.GetExecution(ctxT(t), exec.ID)
	if err != nil || got.State != api.ExecutionStateAwaitingApproval {
		t.Fatalf("GetExecution on b = %v, %v; want awaiting_approval", got.State, err)
	}
	// The body is decoded only after the action checks, on the node the request reached.
	_, err = b.rt.RespondToAction(ctxT(t), exec.ID, "action_00000000000000000000000000000000", approve(true))
	wantCode(t, err, backend.CodeActionNotFound)
	resumed, err := b.rt.RespondToAction(ctxT(t), exec.ID, actionID, approve(true))
	if err != nil {
		t.Fatalf("RespondToAction on b: %v", err)
	}
	if resumed.ID != exec.ID || resumed.State != api.ExecutionStateRunning {
		t.Fatalf("RespondToAction on b answered %s %s, want %s running", resumed.ID, resumed.State, exec.ID)
	}
	_, err = a.rt.RespondToAction(ctxT(t), exec.ID, actionID, approve(true))
	wantCode(t, err, backend.CodeActionAlreadyResolved)

	onB := <-streamed
	checkComplete(t, "stream on b", onB)
	if last := onB[len(onB)-1]; last.Type != api.StandardEventTypeRunCompleted {
		t.Fatalf("stream on b ended with %s: %s", last.Type, typesOf(onB))
	}
	sameLog(t, "replay on a", onB, follow(t, a, exec.ID, 0))
	sameLog(t, "replay on b", onB, follow(t, b, exec.ID, 0))
	sameLog(t, "replay on b from 3", onB[3:], follow(t, b, exec.ID, 3))
	events, _, err := b.rt.ListEvents(ctxT(t), exec.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	sameLog(t, "ListEvents on b", onB, events)

	onA, err := a.rt.GetExecution(ctxT(t), exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	onBExec, err := b.rt.GetExecution(ctxT(t), exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if onA.State != api.ExecutionStateSucceeded || onBExec.UpdatedAt != onA.UpdatedAt || *onBExec.FinalOutput != *onA.FinalOutput {
		t.Fatalf("a and b disagree: %+v vs %+v", onA, onBExec)
	}
	// A cancel of a finished execution on the other node returns it as it is.
	cancelled, err := b.rt.CancelExecution(ctxT(t), exec.ID, nil)
	if err != nil || cancelled.State != api.ExecutionStateSucceeded {
		t.Fatalf("CancelExecution on b of a finished execution = %s, %v", cancelled.State, err)
	}
}

// Cancel on B of an execution A runs: B answers once the execution is cancelled, with A's
// cleanup hook called and run.cancelled carrying the reason; the action the execution waited
// on then answers ACTION_NOT_FOUND on either node.
func TestCancelOnTheOtherNode(t *testing.T) {
	nodes := startCluster(t, clusterOpts{}, "a", "b")
	a, b := nodes[0], nodes[1]
	conv := newConversation(t, a)
	exec := start(t, a, mockRequest(conv, "never answered", api.JSONObject{"requireApproval": true}))
	actionID := approvalAction(t, b, exec.ID)

	reason := "changed my mind"
	got, err := b.rt.CancelExecution(ctxT(t), exec.ID, &reason)
	if err != nil {
		t.Fatalf("CancelExecution on b: %v", err)
	}
	if got.State != api.ExecutionStateCancelled {
		t.Fatalf("CancelExecution on b answered %s", got.State)
	}
	events := follow(t, b, exec.ID, 0)
	checkComplete(t, "log on b", events)
	last, err := events[len(events)-1].Decode()
	if err != nil {
		t.Fatal(err)
	}
	if last.Type != api.StandardEventTypeRunCancelled || !strings.Contains(string(events[len(events)-1].JSON), reason) {
		t.Fatalf("last event %s", events[len(events)-1].JSON)
	}
	for _, n := range nodes {
		_, err = n.rt.RespondToAction(ctxT(t), exec.ID, actionID, approve(true))
		wantCode(t, err, backend.CodeActionNotFound)
	}
}

// 50 identical idempotent starts spread over two nodes give one execution: every caller gets
// its id, and exactly one of them is not a replay.
func TestIdempotentStartAcrossNodes(t *testing.T) {
	runs := &countingRuns{Provider: mock.New()}
	nodes := startCluster(t, clusterOpts{providers: func() []backend.Provider { return []backend.Provider{runs} }}, "a", "b")
	conv := newConversation(t, nodes[0])
	key := "same-key"
	req := mockRequest(conv, "hello", nil)
	req.IdempotencyKey = &key

	const callers = 50
	ids := make([]string, callers)
	var originals atomic.Int64
	errs := make([]error, callers)
	parallel(callers, func(i int) {
		exec, replayed, err := nodes[i%2].rt.StartExecution(ctxT(t), req)
		ids[i], errs[i] = exec.ID, err
		if err == nil && !replayed {
			originals.Add(1)
		}
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("start %d on %s: %v", i, nodes[i%2].name, err)
		}
		if ids[i] != ids[0] {
			t.Fatalf("start %d got execution %s, start 0 got %s", i, ids[i], ids[0])
		}
	}
	if n := originals.Load(); n != 1 {
		t.Fatalf("%d starts were not replays, want 1", n)
	}
	list, err := nodes[1].rt.ListExecutions(ctxT(t), backend.ExecutionFilter{ConversationID: conv})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Executions) != 1 {
		t.Fatalf("the conversation has %d executions, want 1", len(list.Executions))
	}
	// A different request with the same key conflicts on either node.
	other := mockRequest(conv, "something else", nil)
	other.IdempotencyKey = &key
	for _, n := range nodes {
		_, _, err := n.rt.StartExecution(ctxT(t), other)
		wantCode(t, err, backend.CodeIdempotencyConflict)
	}
	checkComplete(t, "the one execution", follow(t, nodes[1], ids[0], 0))
	// The losers' providers never ran: a start refused by the store has no side effects.
	if n := runs.runs.Load(); n != 1 {
		t.Fatalf("the provider ran %d times, want 1", n)
	}
}

// countingRuns counts the runs of the provider it wraps, on every node it is given to.
type countingRuns struct {
	backend.Provider
	runs atomic.Int64
}

func (p *countingRuns) Run(ctx context.Context, run *backend.Run) (backend.Result, error) {
	p.runs.Add(1)
	return p.Provider.Run(ctx, run)
}

// 20 cancels spread over two nodes: one cleanup, one run.cancelled, every caller answered with
// the cancelled execution.
func TestCancelsAcrossNodesAreOneFlight(t *testing.T) {
	p := &blocker{}
	nodes := startCluster(t, clusterOpts{providers: func() []backend.Provider { return []backend.Provider{p} }}, "a", "b")
	a := nodes[0]
	conv := newConversation(t, a)
	exec := start(t, a, api.StartExecutionRequest{ConversationID: conv, ProviderID: blockerID, Input: "x"})
	waitForEvent(t, nodes[1], exec.ID, api.StandardEventTypeOutputTextDelta)

	const callers = 20
	states := make([]api.ExecutionState, callers)
	errs := make([]error, callers)
	parallel(callers, func(i int) {
		reason := fmt.Sprintf("cancel %d", i)
		got, err := nodes[i%2].rt.CancelExecution(ctxT(t), exec.ID, &reason)
		states[i], errs[i] = got.State, err
	})
	for i := range callers {
		if errs[i] != nil || states[i] != api.ExecutionStateCancelled {
			t.Fatalf("cancel %d on %s = %s, %v", i, nodes[i%2].name, states[i], errs[i])
		}
	}
	if n := p.cancels.Load(); n != 1 {
		t.Fatalf("cleanup hook called %d times, want 1", n)
	}
	events := follow(t, nodes[1], exec.ID, 0)
	checkComplete(t, "log", events)
	cancelledEvents := 0
	for _, e := range events {
		if e.Type == api.StandardEventTypeRunCancelled {
			cancelledEvents++
		}
	}
	if cancelledEvents != 1 {
		t.Fatalf("%d run.cancelled: %s", cancelledEvents, typesOf(events))
	}
}

// The same action answered at once on both nodes: one success, one ACTION_ALREADY_RESOLVED,
// whichever node wins.
func TestRespondRacedOnTwoNodes(t *testing.T) {
	nodes := startCluster(t, clusterOpts{}, "a", "b")
	conv := newConversation(t, nodes[0])
	for round := range 6 {
		owner := nodes[round%2]
		exec := start(t, owner, mockRequest(conv, "race", api.JSONObject{"requireApproval": true}))
		actionID := approvalAction(t, nodes[1-round%2], exec.ID)
		errs := make([]error, 2)
		parallel(2, func(i int) {
			_, errs[i] = nodes[i].rt.RespondToAction(ctxT(t), exec.ID, actionID, approve(true))
		})
		var ok, resolved int
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case backend.ErrorCode(err) == backend.CodeActionAlreadyResolved:
				resolved++
			default:
				t.Fatalf("round %d: unexpected error %v", round, err)
			}
		}
		if ok != 1 || resolved != 1 {
			t.Fatalf("round %d: %d successes and %d ACTION_ALREADY_RESOLVED, want 1 and 1", round, ok, resolved)
		}
		events := follow(t, owner, exec.ID, 0)
		checkComplete(t, "log", events)
		responded := 0
		for _, e := range events {
			if e.Type == api.StandardEventTypeActionResponded {
				responded++
			}
		}
		if responded != 1 {
			t.Fatalf("round %d: %d action.responded", round, responded)
		}
	}
}

// 200 subscribers, half on the owner and half on the other node, each get every event exactly
// once, in order.
func TestFanOutAcrossNodes(t *testing.T) {
	nodes := startCluster(t, clusterOpts{}, "a", "b")
	conv := newConversation(t, nodes[0])
	words := make([]string, 60)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	exec := start(t, nodes[0], mockRequest(conv, strings.Join(words, " "), api.JSONObject{"delayMs": 3}))

	const subscribers = 200
	logs := make([][]backend.Event, subscribers)
	parallel(subscribers, func(i int) { logs[i] = follow(t, nodes[i%2], exec.ID, 0) })
	checkComplete(t, "subscriber 0", logs[0])
	for i := 1; i < subscribers; i++ {
		sameLog(t, fmt.Sprintf("subscriber %d on %s", i, nodes[i%2].name), logs[0], logs[i])
	}
	if len(logs[0]) < len(words)+3 {
		t.Fatalf("%d events for %d words", len(logs[0]), len(words))
	}
}

// slowPublish is a store whose commits are published late: Done runs 50 ms after the commit,
// as when the owner's commit goroutine is descheduled on a busy machine. Other nodes see the
// commit at once.
type slowPublish struct{ *postgres.Store }

func (s slowPublish) Submit(req *store.Request) error {
	done := req.Done // the submitter's outcome, a Settler or Done
	if req.Settler != nil {
		done = req.Settler.Settled
	}
	req.Settler, req.Done = nil, func(err error) {
		time.Sleep(50 * time.Millisecond)
		done(err)
	}
	return s.Store.Submit(req)
}

// What a client saw on one node, the owner never contradicts: after following the execution
// to its end on b, the owner's snapshot is terminal and its log is complete, even while the
// owner has not yet published its last commit.
func TestOwnerReadsAreAsFreshAsOtherNodes(t *testing.T) {
	b := startCluster(t, clusterOpts{}, "b")[0]
	a := openNode(t, b.dsn, "a", clusterOpts{wrap: func(s *postgres.Store) store.Store { return slowPublish{s} }})
	conv := newConversation(t, a)
	for range 3 {
		exec := start(t, a, mockRequest(conv, "one two", api.JSONObject{"delayMs": 0}))
		onB := follow(t, b, exec.ID, 0)
		got, err := a.rt.GetExecution(ctxT(t), exec.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != api.ExecutionStateSucceeded {
			t.Fatalf("b followed %s to its end, then the owner answered %s", typesOf(onB), got.State)
		}
		events, _, err := a.rt.ListEvents(ctxT(t), exec.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		sameLog(t, "ListEvents on the owner", onB, events)
	}
}
