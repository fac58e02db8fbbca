package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Submit reports in submission order; a failed batch fails the later batches of its chain
// without applying them (no gap in a sequence), and nothing else. The failing batch is one
// every store refuses: an idempotency key already taken.
func testSubmitOrderAndChains(t *testing.T, open func(t *testing.T) store.Store) {
	s := openStore(t, open)
	taken := store.Idempotency{ConversationID: conversationID(80), Key: "taken", Fingerprint: "f", ExecutionID: executionID(80)}
	commit(t, s, &store.Batch{Idempotency: []store.Idempotency{taken}})

	chained, other := executionID(81), executionID(82)
	var chain store.Chain
	var mu sync.Mutex
	var order []string
	results := map[string]error{}
	var wg sync.WaitGroup
	submit := func(name string, b *store.Batch, c *store.Chain) {
		wg.Add(1)
		err := s.Submit(&store.Request{Batch: b, Chain: c, Done: func(err error) {
			mu.Lock()
			order = append(order, name)
			results[name] = err
			mu.Unlock()
			wg.Done()
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	bad := &store.Batch{Events: deltas(chained, 3, 3), Idempotency: []store.Idempotency{{ConversationID: conversationID(80), Key: "taken",
		Fingerprint: "f", ExecutionID: chained}}}
	submit("c1", &store.Batch{Events: deltas(chained, 1, 2)}, &chain)
	submit("o1", &store.Batch{Events: deltas(other, 1, 1)}, nil)
	submit("bad", bad, &chain)
	submit("o2", &store.Batch{Events: deltas(other, 2, 2)}, nil)
	submit("after", &store.Batch{Events: deltas(chained, 4, 4)}, &chain)
	submit("o3", &store.Batch{Events: deltas(other, 3, 3)}, nil)
	wg.Wait()
	if got := fmt.Sprint(order); got != "[c1 o1 bad o2 after o3]" {
		t.Fatalf("reported in the order %s, want submission order", got)
	}
	for _, name := range []string{"c1", "o1", "o2", "o3"} {
		if results[name] != nil {
			t.Fatalf("%s failed: %v", name, results[name])
		}
	}
	if !errors.Is(results["bad"], store.ErrConflict) || !errors.Is(results["after"], store.ErrConflict) {
		t.Fatalf("bad: %v, after: %v; want both to fail with the chain's error", results["bad"], results["after"])
	}
	if chain.Err() == nil {
		t.Fatal("the chain is healthy after a failure")
	}
	if last, _ := s.LastSequence(chained); last != 2 {
		t.Fatalf("the chain's last sequence is %d, want 2: a batch after the failure was applied", last)
	}
	if last, _ := s.LastSequence(other); last != 3 {
		t.Fatalf("the neighbour's last sequence is %d, want 3", last)
	}
	// The chain stays failed: a later batch is refused without being applied.
	submit("later", &store.Batch{Events: deltas(chained, 3, 3)}, &chain)
	wg.Wait()
	if results["later"] == nil {
		t.Fatal("a later batch of the failed chain was applied")
	}
	if last, _ := s.LastSequence(chained); last != 2 {
		t.Fatalf("the chain's last sequence is %d after a refused batch", last)
	}
}

// Many goroutines submitting at once, each its own execution's chain: every batch is
// committed once, each execution's events in its own order, none lost.
func testConcurrentSubmit(t *testing.T, open func(t *testing.T) store.Store) {
	s := openStore(t, open)
	const writers, perWriter = 16, 40
	var wg sync.WaitGroup
	errs := make(chan error, writers*perWriter)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := executionID(100 + w)
			var chain store.Chain
			var reported sync.WaitGroup
			next := int64(0) // written only by Done, which runs in submission order
			for i := range perWriter {
				seq := int64(i + 1)
				reported.Add(1)
				err := s.Submit(&store.Request{Batch: &store.Batch{Events: deltas(id, seq, seq)}, Chain: &chain, Done: func(err error) {
					if err == nil && seq != next+1 {
						err = fmt.Errorf("%s: sequence %d reported after %d", id, seq, next)
					}
					next = seq
					errs <- err
					reported.Done()
				}})
				if err != nil {
					errs <- err
					reported.Done()
				}
			}
			reported.Wait()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for w := range writers {
		id := executionID(100 + w)
		events, err := s.Events(id, 0, 0)
		if err != nil || len(events) != perWriter || events[0].Sequence != 1 || events[perWriter-1].Sequence != perWriter {
			t.Fatalf("%s: %d events (%v), want 1..%d", id, len(events), err, perWriter)
		}
	}
}

// A reader never sees part of a batch: every batch adds two events and moves the record to
// match, and concurrent reads always find an even count.
func testNoHalfAppliedBatch(t *testing.T, open func(t *testing.T) store.Store) {
	s := openStore(t, open)
	id := executionID(90)
	const batches = 100
	stop := make(chan struct{})
	readErr := make(chan error, 1)
	go func() {
		defer close(readErr)
		for {
			select {
			case <-stop:
				return
			default:
			}
			events, err := s.Events(id, 0, 0)
			if err != nil {
				readErr <- err
				return
			}
			if len(events)%2 != 0 {
				readErr <- fmt.Errorf("a read saw %d events: half a batch", len(events))
				return
			}
			if last, err := s.LastSequence(id); err != nil || last%2 != 0 {
				readErr <- fmt.Errorf("LastSequence saw %d (%v): half a batch", last, err)
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for i := range batches {
		seq := int64(2*i + 1)
		rec := execution(90, 90, api.ExecutionStateRunning, "")
		rec.Execution.Input = fmt.Sprint(seq + 1)
		wg.Add(1)
		if err := s.Submit(&store.Request{Batch: &store.Batch{Executions: []store.Execution{rec}, Events: deltas(id, seq, seq+1)},
			Done: func(err error) {
				if err != nil {
					t.Error(err)
				}
				wg.Done()
			}}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(stop)
	if err := <-readErr; err != nil {
		t.Fatal(err)
	}
	rec, _, _ := s.Execution(id)
	if last, _ := s.LastSequence(id); last != 2*batches || rec.Execution.Input != fmt.Sprint(last) {
		t.Fatalf("after all batches: last sequence %d, record says %s", last, rec.Execution.Input)
	}
}

// Close commits what was submitted before it, then refuses: ErrClosed, and Done is never
// called for a refused request. A second Close is harmless.
func testClose(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	id := executionID(95)
	const n = 50
	var wg sync.WaitGroup
	var failed []error
	var mu sync.Mutex
	for i := range n {
		seq := int64(i + 1)
		wg.Add(1)
		if err := s.Submit(&store.Request{Batch: &store.Batch{Events: deltas(id, seq, seq)}, Done: func(err error) {
			if err != nil {
				mu.Lock()
				failed = append(failed, err)
				mu.Unlock()
			}
			wg.Done()
		}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wg.Wait() // every request queued before Close was reported
	if len(failed) > 0 {
		t.Fatalf("requests queued before Close failed: %v", failed[0])
	}
	called := false
	err := s.Submit(&store.Request{Batch: &store.Batch{Events: deltas(id, n+1, n+1)}, Done: func(error) { called = true }})
	if !errors.Is(err, store.ErrClosed) || called {
		t.Fatalf("Submit after Close: %v (Done called: %v), want ErrClosed", err, called)
	}
	if err := s.Commit(&store.Batch{Events: deltas(id, n+1, n+1)}); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Commit after Close: %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}
