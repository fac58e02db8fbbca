package backend_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// gated is a provider whose runs wait until their input is released (or their context ends),
// recording the order in which runs began: what the busy policies are about.
type gated struct {
	scripted
	mu      sync.Mutex
	began   []string
	release map[string]chan struct{}
	fail    map[string]bool // inputs whose run fails once released
}

func newGated() *gated {
	g := &gated{release: map[string]chan struct{}{}, fail: map[string]bool{}}
	g.scripted = scripted{id: "gated", run: g.runOne}
	return g
}

func (g *gated) gate(input string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.release[input]
	if !ok {
		c = make(chan struct{})
		g.release[input] = c
	}
	return c
}

func (g *gated) runOne(ctx context.Context, run *backend.Run) (backend.Result, error) {
	input := run.Input()
	g.mu.Lock()
	g.began = append(g.began, input)
	fail := g.fail[input]
	g.mu.Unlock()
	select {
	case <-g.gate(input):
	case <-ctx.Done():
		return backend.Result{}, context.Cause(ctx)
	}
	if fail {
		return backend.Result{}, errors.New("failed on purpose")
	}
	return backend.Result{FinalOutput: "done: " + input}, nil
}

func (g *gated) open(input string) { close(g.gate(input)) }

func (g *gated) order() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.began)
}

func policyPtr(p api.BusyPolicy) *api.BusyPolicy { return &p }

func conversationWith(t *testing.T, rt *backend.Runtime, p api.BusyPolicy) string {
	t.Helper()
	c, err := rt.CreateConversationFrom(ctxT(t), api.CreateConversationRequest{BusyPolicy: policyPtr(p)})
	if err != nil {
		t.Fatalf("CreateConversationFrom: %v", err)
	}
	if c.BusyPolicy == nil || *c.BusyPolicy != p {
		t.Fatalf("created conversation's policy %v, want %s", c.BusyPolicy, p)
	}
	return c.ID
}

func startGated(t *testing.T, rt *backend.Runtime, conv, input string, override api.BusyPolicy, key string) (api.Execution, error) {
	t.Helper()
	req := startReq(conv, startOpts{provider: "gated", input: input, key: key})
	if override != "" {
		req.BusyPolicy = policyPtr(override)
	}
	exec, _, err := rt.StartExecution(ctxT(t), req)
	return exec, err
}

func mustStartGated(t *testing.T, rt *backend.Runtime, conv, input string, override api.BusyPolicy) api.Execution {
	t.Helper()
	exec, err := startGated(t, rt, conv, input, override, "")
	if err != nil {
		t.Fatalf("start %s: %v", input, err)
	}
	return exec
}

// waitState waits until execution id is in state (a hang guard bounds it).
func waitState(t *testing.T, rt *backend.Runtime, id string, state api.ExecutionState) api.Execution {
	t.Helper()
	if state.Terminal() {
		_, exec := finalOf(t, rt, id)
		if exec.State != state {
			t.Fatalf("%s ended %s, want %s", id, exec.State, state)
		}
		return exec
	}
	for e, err := range backend.FollowExecution(ctxT(t), rt, id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if exec := getExecution(t, rt, id); exec.State == state {
			return exec
		} else if exec.State.Terminal() {
			t.Fatalf("%s ended %s waiting for %s", id, exec.State, state)
		}
		_ = e
	}
	t.Fatalf("%s ended without reaching %s", id, state)
	return api.Execution{}
}

// A conversation created without a policy shows none, and its starts carry none: a portable
// client sees the reference's bytes. One created with a policy keeps it (also across a restart).
func TestConversationBusyPolicyIsShownOnlyWhenGiven(t *testing.T) {
	dir := t.TempDir()
	rt := openRuntime(t, dir, optsNone())
	plain := newConversation(t, rt)
	c, err := rt.GetConversation(ctxT(t), plain)
	if err != nil {
		t.Fatal(err)
	}
	if raw, _ := json.Marshal(c); strings.Contains(string(raw), "busyPolicy") {
		t.Fatalf("a conversation created without a policy shows one: %s", raw)
	}
	exec := start(t, rt, plain, startOpts{input: "x"})
	if raw, _ := json.Marshal(exec); strings.Contains(string(raw), "waitingFor") {
		t.Fatalf("a parallel start shows waitingFor: %s", raw)
	}
	queued := conversationWith(t, rt, api.BusyPolicyEnqueue)
	rt.Close()

	rt = openRuntime(t, dir, optsNone())
	c, err = rt.GetConversation(ctxT(t), queued)
	if err != nil || c.BusyPolicy == nil || *c.BusyPolicy != api.BusyPolicyEnqueue {
		t.Fatalf("after a restart: %+v, %v", c, err)
	}
	// Another tenant's conversation is unknown to a start, whatever its policy.
	alice := backend.WithTenant(ctxT(t), backend.Tenant{ID: "alice"})
	owned, err := rt.CreateConversationFrom(alice, api.CreateConversationRequest{BusyPolicy: policyPtr(api.BusyPolicyReject)})
	if err != nil {
		t.Fatal(err)
	}
	bob := backend.WithTenant(ctxT(t), backend.Tenant{ID: "bob"})
	_, _, err = rt.StartExecution(bob, api.StartExecutionRequest{ConversationID: owned.ID, ProviderID: "mock", BusyPolicy: policyPtr(api.BusyPolicyInterrupt)})
	wantCode(t, err, backend.CodeNotFound, "Conversation not found: "+owned.ID)
	_, err = rt.CreateConversationFrom(ctxT(t), api.CreateConversationRequest{BusyPolicy: policyPtr("rollback")})
	wantCode(t, err, backend.CodeValidation, "busyPolicy must be one of parallel, reject, enqueue, interrupt")
	_, _, err = rt.StartExecution(ctxT(t), api.StartExecutionRequest{ConversationID: plain, ProviderID: "mock", BusyPolicy: policyPtr("later")})
	wantCode(t, err, backend.CodeValidation, "busyPolicy must be one of parallel, reject, enqueue, interrupt")
}

// reject: a start while another execution of the conversation is not terminal is refused with
// CONVERSATION_BUSY naming it, creates nothing and registers no idempotency key; once the
// conversation is idle, the same key starts.
func TestRejectRefusesWhileBusy(t *testing.T) {
	g := newGated()
	rt := scriptedRuntime(t, optsNone(), g)
	conv := conversationWith(t, rt, api.BusyPolicyReject)
	first := mustStartGated(t, rt, conv, "first", "")
	if first.WaitingFor != nil {
		t.Fatalf("a start on an idle conversation waits for %v", first.WaitingFor)
	}
	_, err := startGated(t, rt, conv, "second", "", "retry-me")
	e := wantCode(t, err, backend.CodeConversationBusy, "Conversation "+conv+" is busy: an execution of it has not ended")
	if got := jsonString(e.Details); got != jsonString(map[string]any{"conversationId": conv, "executionIds": []string{first.ID}}) {
		t.Fatalf("details %s", got)
	}
	page, err := rt.ListExecutions(ctxT(t), backend.ExecutionFilter{ConversationID: conv, Limit: 10})
	if err != nil || len(page.Executions) != 1 {
		t.Fatalf("the conversation lists %d executions (%v), want only the first", len(page.Executions), err)
	}
	g.open("first")
	waitState(t, rt, first.ID, api.ExecutionStateSucceeded)
	second, err := startGated(t, rt, conv, "second", "", "retry-me")
	if err != nil {
		t.Fatalf("the retry once idle: %v", err)
	}
	g.open("second")
	waitState(t, rt, second.ID, api.ExecutionStateSucceeded)
	// A parallel override runs beside a running execution of a reject conversation.
	third := mustStartGated(t, rt, conv, "third", "")
	fourth := mustStartGated(t, rt, conv, "fourth", api.BusyPolicyParallel)
	g.open("fourth")
	waitState(t, rt, fourth.ID, api.ExecutionStateSucceeded)
	g.open("third")
	waitState(t, rt, third.ID, api.ExecutionStateSucceeded)
}

// enqueue: accepted and queued, waiting for what was running, in arrival order; a failed or
// cancelled predecessor does not block the turns after it; cancelling a waiting execution
// ends it without it ever running.
func TestEnqueueRunsTurnsInArrivalOrder(t *testing.T) {
	g := newGated()
	g.fail["b"] = true
	rt := scriptedRuntime(t, optsNone(), g)
	conv := conversationWith(t, rt, api.BusyPolicyEnqueue)
	a := mustStartGated(t, rt, conv, "a", "")
	waitState(t, rt, a.ID, api.ExecutionStateRunning)
	b := mustStartGated(t, rt, conv, "b", "")
	c := mustStartGated(t, rt, conv, "c", "")
	d := mustStartGated(t, rt, conv, "d", "")
	e := mustStartGated(t, rt, conv, "e", "")
	for _, tc := range []struct {
		exec api.Execution
		want []string
	}{{b, []string{a.ID}}, {c, []string{a.ID, b.ID}}, {d, []string{a.ID, b.ID, c.ID}}, {e, []string{a.ID, b.ID, c.ID, d.ID}}} {
		if tc.exec.State != api.ExecutionStateQueued || !slices.Equal(tc.exec.WaitingFor, tc.want) {
			t.Fatalf("%s: %s waiting for %v, want queued waiting for %v", tc.exec.Input, tc.exec.State, tc.exec.WaitingFor, tc.want)
		}
		if got := getExecution(t, rt, tc.exec.ID); !slices.Equal(got.WaitingFor, tc.want) {
			t.Fatalf("%s reads back waiting for %v", tc.exec.Input, got.WaitingFor)
		}
	}
	// c is cancelled while it waits: it never runs, and d and e do not wait for it any more.
	if _, err := rt.CancelExecution(ctxT(t), c.ID, nil); err != nil {
		t.Fatal(err)
	}
	waitState(t, rt, c.ID, api.ExecutionStateCancelled)
	g.open("a")
	waitState(t, rt, a.ID, api.ExecutionStateSucceeded)
	g.open("b") // b fails: d still gets its turn
	wantFailed(t, rt, b.ID, "failed on purpose")
	got := waitState(t, rt, d.ID, api.ExecutionStateRunning)
	if got.WaitingFor != nil {
		t.Fatalf("a running execution still shows waitingFor %v", got.WaitingFor)
	}
	g.open("d")
	g.open("e")
	waitState(t, rt, e.ID, api.ExecutionStateSucceeded)
	if got := g.order(); !slices.Equal(got, []string{"a", "b", "d", "e"}) {
		t.Fatalf("runs began in the order %v, want a b d e (c was cancelled while waiting)", got)
	}
	events, exec := finalOf(t, rt, c.ID)
	checkLog(t, exec, events)
	if got := types(events); !slices.Equal(got, []api.StandardEventType{api.StandardEventTypeRunQueued, api.StandardEventTypeRunCancelled}) {
		t.Fatalf("the cancelled waiter's log: %v", got)
	}
	if exec.WaitingFor != nil {
		t.Fatalf("the cancelled waiter still shows waitingFor %v", exec.WaitingFor)
	}
}

// interrupt (here a per-start override on a parallel conversation): every execution the new
// one waits for is cancelled with a reason naming it and the caller as the actor; then it runs.
func TestInterruptCancelsWhatRunsAndStarts(t *testing.T) {
	g := newGated()
	rt := scriptedRuntime(t, optsNone(), g)
	conv := newConversation(t, rt)
	a := mustStartGated(t, rt, conv, "a", "")
	b := mustStartGated(t, rt, conv, "b", "")
	waitState(t, rt, a.ID, api.ExecutionStateRunning)
	req := startReq(conv, startOpts{provider: "gated", input: "c"})
	req.BusyPolicy = policyPtr(api.BusyPolicyInterrupt)
	c, _, err := rt.StartExecution(backend.WithActor(ctxT(t), "alice"), req)
	if err != nil {
		t.Fatal(err)
	}
	// Both, in either order: a and b may be created in the same millisecond, and ids within
	// one millisecond order by their random part.
	if waiting := slices.Sorted(slices.Values(c.WaitingFor)); !slices.Equal(waiting, slices.Sorted(slices.Values([]string{a.ID, b.ID}))) {
		t.Fatalf("the interrupting start waits for %v, want %s and %s", c.WaitingFor, a.ID, b.ID)
	}
	for _, id := range []string{a.ID, b.ID} {
		cancelled := waitForEvent(t, rt, id, api.StandardEventTypeRunCancelled)
		data := typed(cancelled.Data.AsRunCancelledData())
		if data.Reason == nil || *data.Reason != "Interrupted by "+c.ID || data.Actor == nil || data.Actor.ID != "alice" {
			t.Fatalf("run.cancelled of %s: %s", id, jsonString(cancelled.Data))
		}
	}
	g.open("c")
	waitState(t, rt, c.ID, api.ExecutionStateSucceeded)
	if got := g.order(); got[len(got)-1] != "c" {
		t.Fatalf("runs began in the order %v: c must begin after the ones it interrupted", got)
	}
}

// An idempotent start keeps its meaning: a replay answers the same execution and never queues
// a second one, the same policy given explicitly or by the conversation is the same request,
// and a replay under another policy is IDEMPOTENCY_CONFLICT.
func TestBusyPolicyAndIdempotentReplays(t *testing.T) {
	g := newGated()
	rt := scriptedRuntime(t, optsNone(), g)
	conv := conversationWith(t, rt, api.BusyPolicyEnqueue)
	a := mustStartGated(t, rt, conv, "a", "")
	b, err := startGated(t, rt, conv, "b", "", "k")
	if err != nil {
		t.Fatal(err)
	}
	for _, override := range []api.BusyPolicy{"", api.BusyPolicyEnqueue} {
		again, err := startGated(t, rt, conv, "b", override, "k")
		if err != nil || again.ID != b.ID || !slices.Equal(again.WaitingFor, []string{a.ID}) {
			t.Fatalf("replay (override %q): %s waiting for %v, %v; want %s", override, again.ID, again.WaitingFor, err, b.ID)
		}
	}
	for _, override := range []api.BusyPolicy{api.BusyPolicyParallel, api.BusyPolicyReject, api.BusyPolicyInterrupt} {
		_, err := startGated(t, rt, conv, "b", override, "k")
		wantCode(t, err, backend.CodeIdempotencyConflict, "")
	}
	page, err := rt.ListExecutions(ctxT(t), backend.ExecutionFilter{ConversationID: conv, Limit: 10})
	if err != nil || len(page.Executions) != 2 {
		t.Fatalf("%d executions (%v), want a and b: a replay queued another", len(page.Executions), err)
	}
	g.open("a")
	g.open("b")
	waitState(t, rt, b.ID, api.ExecutionStateSucceeded)
}

// Executions waiting for their turn survive a restart: recovery fails what was running (its
// provider is gone) and lets the waiting ones wait on; they then run one at a time, in arrival
// order, each after run.started was committed.
func TestWaitingTurnsSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	g := newGated()
	rt := openRuntime(t, dir, backend.Options{Providers: []backend.Provider{g}})
	conv := conversationWith(t, rt, api.BusyPolicyEnqueue)
	a := mustStartGated(t, rt, conv, "a", "")
	waitState(t, rt, a.ID, api.ExecutionStateRunning)
	b := mustStartGated(t, rt, conv, "b", "")
	c := mustStartGated(t, rt, conv, "c", "")
	rt.Close()

	g2 := newGated()
	rt = openRuntime(t, dir, backend.Options{Providers: []backend.Provider{g2}})
	wantFailed(t, rt, a.ID, "Runtime restarted before the execution finished")
	got := waitState(t, rt, b.ID, api.ExecutionStateRunning)
	if got.WaitingFor != nil {
		t.Fatalf("b runs but shows waitingFor %v", got.WaitingFor)
	}
	if exec := getExecution(t, rt, c.ID); exec.State != api.ExecutionStateQueued || !slices.Equal(exec.WaitingFor, []string{a.ID, b.ID}) {
		t.Fatalf("c after the restart: %s waiting for %v", exec.State, exec.WaitingFor)
	}
	g2.open("b")
	g2.open("c")
	for _, id := range []string{b.ID, c.ID} {
		events, exec := finalOf(t, rt, id)
		checkLog(t, exec, events)
		if exec.State != api.ExecutionStateSucceeded {
			t.Fatalf("%s ended %s", id, exec.State)
		}
	}
	if got := g2.order(); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("after the restart runs began in the order %v, want b c", got)
	}
}

// Concurrent starts on one reject conversation: exactly one is accepted, every other one is
// CONVERSATION_BUSY naming it.
func TestConcurrentRejectStartsAcceptOne(t *testing.T) {
	g := newGated()
	rt := scriptedRuntime(t, optsNone(), g)
	conv := conversationWith(t, rt, api.BusyPolicyReject)
	const n = 50
	var wg sync.WaitGroup
	results := make([]error, n)
	execs := make([]api.Execution, n)
	for i := range n {
		wg.Go(func() { execs[i], results[i] = startGated(t, rt, conv, "x", "", "") })
	}
	wg.Wait()
	var accepted []string
	for i, err := range results {
		switch {
		case err == nil:
			accepted = append(accepted, execs[i].ID)
		case backend.ErrorCode(err) != backend.CodeConversationBusy:
			t.Fatalf("start %d: %v", i, err)
		}
	}
	if len(accepted) != 1 {
		t.Fatalf("%d starts accepted, want exactly one", len(accepted))
	}
	for _, err := range results {
		var e *backend.Error
		if errors.As(err, &e) && jsonString(e.Details["executionIds"]) != jsonString(accepted) {
			t.Fatalf("a refusal names %v, want %v", e.Details["executionIds"], accepted)
		}
	}
	g.open("x")
	waitState(t, rt, accepted[0], api.ExecutionStateSucceeded)
}
