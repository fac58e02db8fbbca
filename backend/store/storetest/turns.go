package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// A Turn sees the conversation's other executions that are not terminal when its batch is
// applied, oldest first, and nothing else: terminal ones and other conversations' are not
// counted. A rejecting turn fails its batch with a *BusyError naming them and applies nothing of
// it; otherwise they are recorded as what the new execution waits for, in the turn and in the
// stored record. Batches of the same group count as applied in submission order, and a busy
// batch does not fail its neighbours.
func testTurns(t *testing.T, open func(t *testing.T) store.Store) {
	s := openStore(t, open)
	const busy, idle, other = 90, 91, 92
	for _, conv := range []int{busy, idle, other} {
		commit(t, s, &store.Batch{Conversations: []store.Conversation{{
			Conversation: api.Conversation{ID: conversationID(conv), CreatedAt: createdAt(0), Metadata: api.JSONObject{}},
			Tenant:       "alice",
		}}})
	}
	commit(t, s, &store.Batch{Executions: []store.Execution{
		execution(900, busy, api.ExecutionStateSucceeded, "alice"),
		execution(901, busy, api.ExecutionStateRunning, "alice"),
		execution(902, busy, api.ExecutionStateQueued, "alice"),
		execution(903, busy, api.ExecutionStateCancelled, "alice"),
		execution(904, busy, api.ExecutionStateAwaitingApproval, "alice"),
		execution(905, idle, api.ExecutionStateFailed, "alice"),
		execution(906, other, api.ExecutionStateRunning, "alice"),
	}})
	unfinished := []string{executionID(901), executionID(902), executionID(904)}

	// reject on a busy conversation: refused, naming the unfinished ones in arrival order.
	err := s.Commit(turnBatch(910, busy, true))
	var be *store.BusyError
	if !errors.Is(err, store.ErrBusy) || !errors.As(err, &be) {
		t.Fatalf("reject on a busy conversation: %v, want a *BusyError", err)
	}
	if be.ConversationID != conversationID(busy) || !slices.Equal(be.ExecutionIDs, unfinished) {
		t.Fatalf("BusyError %+v, want %s busy with %v", be, conversationID(busy), unfinished)
	}
	if _, found, _ := s.Execution(executionID(910)); found {
		t.Fatal("the rejected start's execution was applied")
	}
	if last, _ := s.LastSequence(executionID(910)); last != 0 {
		t.Fatal("the rejected start's events were applied")
	}

	// A parallel turn (an override of the conversation's policy) checks and records nothing.
	b := turnBatch(909, busy, true)
	b.Turns[0].Reject, b.Turns[0].Parallel = false, true
	commit(t, s, b)
	if b.Turns[0].WaitingFor != nil {
		t.Fatalf("a parallel turn waits for %v", b.Turns[0].WaitingFor)
	}
	checkWaiting(t, s, executionID(909), nil)
	unfinished = append(unfinished, executionID(909))

	// reject on a conversation whose executions are all terminal: accepted, waiting for none.
	b = turnBatch(911, idle, true)
	commit(t, s, b)
	if b.Turns[0].WaitingFor != nil {
		t.Fatalf("a turn on an idle conversation waits for %v", b.Turns[0].WaitingFor)
	}
	checkWaiting(t, s, executionID(911), nil)

	// enqueue: accepted, waiting for the unfinished ones (the turn and the record say so).
	b = turnBatch(912, busy, false)
	commit(t, s, b)
	if !slices.Equal(b.Turns[0].WaitingFor, unfinished) {
		t.Fatalf("the turn waits for %v, want %v", b.Turns[0].WaitingFor, unfinished)
	}
	checkWaiting(t, s, executionID(912), unfinished)
	unfinished = append(unfinished, executionID(912))

	// Several batches at once (one group or several: the outcome is the same): each sees the
	// ones submitted before it, whatever became of them, and a rejected one fails alone.
	finish := execution(901, busy, api.ExecutionStateSucceeded, "alice")
	batches := []*store.Batch{
		{Executions: []store.Execution{finish}}, // 901 ends
		turnBatch(913, busy, false),             // waits for 902 904 912
		turnBatch(914, busy, true),              // busy: refused alone
		{Executions: []store.Execution{execution(915, other, api.ExecutionStateQueued, "alice")}}, // a neighbour
		{Executions: []store.Execution{execution(916, idle, api.ExecutionStateQueued, "alice")}},  // idle is busy now
		turnBatch(917, idle, true),  // busy with 911 and 916
		turnBatch(918, idle, false), // waits for 911 and 916
		// An execution that starts and ends around a turn: queued when the turn is applied.
		{Executions: []store.Execution{execution(919, other, api.ExecutionStateQueued, "alice")}},
		turnBatch(920, other, false), // waits for 906, 915 and 919
		{Executions: []store.Execution{execution(919, other, api.ExecutionStateSucceeded, "alice")}},
	}
	errs := submitAll(t, s, batches)
	for i, want := range []error{nil, nil, store.ErrBusy, nil, nil, store.ErrBusy, nil, nil, nil, nil} {
		if !errors.Is(errs[i], want) || (want == nil && errs[i] != nil) {
			t.Fatalf("batch %d: %v, want %v", i, errs[i], want)
		}
	}
	checkWaiting(t, s, executionID(913), []string{executionID(902), executionID(904), executionID(909), executionID(912)})
	checkWaiting(t, s, executionID(918), []string{executionID(911), executionID(916)})
	checkWaiting(t, s, executionID(920), []string{executionID(906), executionID(915), executionID(919)})
	if !errors.As(errs[5], &be) || !slices.Equal(be.ExecutionIDs, []string{executionID(911), executionID(916)}) {
		t.Fatalf("the second rejection: %v", errs[5])
	}
	for _, n := range []int{914, 917} {
		if _, found, _ := s.Execution(executionID(n)); found {
			t.Fatalf("rejected %s was applied", executionID(n))
		}
	}
	if _, found, _ := s.Execution(executionID(915)); !found {
		t.Fatal("the neighbour of a rejected start was not applied")
	}
}

// turnBatch is the start of execution n in conversation conv under a policy that rejects or
// waits.
func turnBatch(n, conv int, reject bool) *store.Batch {
	rec := execution(n, conv, api.ExecutionStateQueued, "alice")
	return &store.Batch{
		Executions: []store.Execution{rec},
		Events:     []store.StoredEvent{event(rec.Execution.ID, 1, api.StandardEventTypeRunQueued)},
		Turns:      []store.Turn{{ConversationID: conversationID(conv), ExecutionID: rec.Execution.ID, Reject: reject}},
	}
}

// checkWaiting checks the stored record of id waits for want (nil: for nothing, no field).
func checkWaiting(t *testing.T, s store.Store, id string, want []string) {
	t.Helper()
	rec, found, err := s.Execution(id)
	if err != nil || !found {
		t.Fatalf("%s: found %v, %v", id, found, err)
	}
	if !slices.Equal(rec.Execution.WaitingFor, want) {
		t.Fatalf("%s waits for %v, want %v", id, rec.Execution.WaitingFor, want)
	}
}

// submitAll submits batches back to back (so they may share a commit) and returns each outcome.
func submitAll(t *testing.T, s store.Store, batches []*store.Batch) []error {
	t.Helper()
	errs := make([]error, len(batches))
	var wg sync.WaitGroup
	for i, b := range batches {
		wg.Add(1)
		if err := s.Submit(&store.Request{Batch: b, Done: func(err error) { errs[i] = err; wg.Done() }}); err != nil {
			t.Fatal(fmt.Errorf("Submit: %w", err))
		}
	}
	wg.Wait()
	return errs
}
