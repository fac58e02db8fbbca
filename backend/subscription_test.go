package backend_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
)

// gatedEmitter emits n deltas "0".."n-1", each once the test lets it through, then succeeds.
func gatedEmitter(n int, gate <-chan struct{}) *scripted {
	return &scripted{run: func(ctx context.Context, run *backend.Run) (backend.Result, error) {
		for i := range n {
			select {
			case <-gate:
			case <-ctx.Done():
				return backend.Result{}, ctx.Err()
			}
			if err := run.EmitText(fmt.Sprint(i)); err != nil {
				return backend.Result{}, err
			}
		}
		return backend.Result{FinalOutput: "done"}, nil
	}}
}

// readAll drains a subscription with Ready/Read the way an SSE handler does.
func readAll(ctx context.Context, sub *backend.Stream) ([]backend.Event, error) {
	var out []backend.Event
	for {
		ready := sub.Ready()
		events, done, err := sub.Read(7)
		if err != nil {
			return out, err
		}
		out = append(out, events...)
		if done {
			return out, nil
		}
		if len(events) == 0 {
			select {
			case <-ready:
			case <-ctx.Done():
				return out, ctx.Err()
			}
		}
	}
}

// 100 subscribers on one execution, half of them joining mid-stream (some from 0, some from
// their join point), each get every event after their cursor exactly once and in order, ending
// with the terminal event. The hot window is small, so early events come back from the store.
func TestHundredSubscribersEachGetEveryEventOnce(t *testing.T) {
	const deltas = 120
	gate := make(chan struct{})
	rt := scriptedRuntime(t, backend.Options{}, gatedEmitter(deltas, gate))
	backend.SetHotWindow(rt, 16)
	exec := startScripted(t, rt, newConversation(t, rt))
	const total = deltas + 4 // queued, started, deltas, done, completed

	type result struct {
		after  int64
		events []backend.Event
		err    error
	}
	results := make(chan result, 100)
	var wg sync.WaitGroup
	subscribe := func(i int, after int64) {
		wg.Go(func() {
			if i%2 == 0 {
				sub, err := rt.OpenStream(context.Background(), backend.StreamRequest{ExecutionID: exec.ID, After: after})
				if err != nil {
					results <- result{after: after, err: err}
					return
				}
				defer sub.Close()
				events, err := readAll(ctxT(t), sub)
				results <- result{after, events, err}
				return
			}
			var events []backend.Event
			var err error
			for e, ferr := range backend.FollowExecution(ctxT(t), rt, exec.ID, after) {
				if ferr != nil {
					err = ferr
					break
				}
				events = append(events, e)
			}
			results <- result{after, events, err}
		})
	}
	for i := range 50 {
		subscribe(i, 0)
	}
	for i := range deltas {
		gate <- struct{}{}
		if i%2 == 0 && i/2 < 50 {
			j := i / 2
			after := int64(0)
			if j%2 == 1 {
				after = int64(i) // join where the stream roughly is
			}
			subscribe(50+j, after)
		}
	}
	wg.Wait()
	close(results)
	n := 0
	for r := range results {
		n++
		if r.err != nil {
			t.Fatalf("subscriber after %d: %v", r.after, r.err)
		}
		if want := total - int(r.after); len(r.events) != want {
			t.Fatalf("subscriber after %d got %d events, want %d", r.after, len(r.events), want)
		}
		for k, e := range r.events {
			if e.Sequence != r.after+int64(k)+1 {
				t.Fatalf("subscriber after %d: event %d has sequence %d", r.after, k, e.Sequence)
			}
		}
		if !r.events[len(r.events)-1].Terminal() {
			t.Fatalf("subscriber after %d did not end on the terminal event", r.after)
		}
	}
	if n != 100 {
		t.Fatalf("%d subscribers finished", n)
	}
	// Full replay equals the live stream (and reads across the evicted part).
	all, next, err := rt.ListEvents(ctxT(t), exec.ID, 0, 0)
	if err != nil || len(all) != total || next != total {
		t.Fatalf("replay %d events next %d err %v", len(all), next, err)
	}
}

func TestListEventsPagingAndCursorEcho(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	exec := start(t, rt, newConversation(t, rt), startOpts{input: "hello runtime"})
	collect(t, rt, exec.ID, 0)
	page, next, err := rt.ListEvents(ctxT(t), exec.ID, 0, 3)
	if err != nil || len(page) != 3 || next != 3 {
		t.Fatalf("page 1: %d next %d %v", len(page), next, err)
	}
	page, next, _ = rt.ListEvents(ctxT(t), exec.ID, next, 3)
	if len(page) != 3 || page[0].Sequence != 4 || next != 6 {
		t.Fatalf("page 2: %d next %d", len(page), next)
	}
	page, next, _ = rt.ListEvents(ctxT(t), exec.ID, 6, 3)
	if len(page) != 1 || !page[0].Terminal() || next != 7 {
		t.Fatalf("page 3: %d next %d", len(page), next)
	}
	page, next, _ = rt.ListEvents(ctxT(t), exec.ID, 100, 0)
	if len(page) != 0 || next != 100 {
		t.Fatalf("beyond the end: %d next %d (the cursor is echoed)", len(page), next)
	}
	_, _, err = rt.ListEvents(ctxT(t), exec.ID, -1, 0)
	wantCode(t, err, backend.CodeValidation, "Event cursor must be a non-negative integer")
}

func TestSubscriptionEnds(t *testing.T) {
	gate := make(chan struct{})
	rt := scriptedRuntime(t, backend.Options{}, gatedEmitter(1, gate))
	conv := newConversation(t, rt)
	exec := startScripted(t, rt, conv)

	// A cursor beyond the end of a live execution waits silently for the end.
	sub, err := rt.OpenStream(context.Background(), backend.StreamRequest{ExecutionID: exec.ID, After: 50})
	if err != nil {
		t.Fatal(err)
	}
	if events, done, err := sub.Read(0); len(events) != 0 || done || err != nil {
		t.Fatalf("early read: %d %v %v", len(events), done, err)
	}
	gate <- struct{}{}
	finalOf(t, rt, exec.ID)
	<-sub.Ready()
	if events, done, err := sub.Read(0); len(events) != 0 || !done || err != nil {
		t.Fatalf("after the end: %d %v %v", len(events), done, err)
	}

	// A terminal execution with the cursor at its end is done at once.
	sub2, _ := rt.OpenStream(context.Background(), backend.StreamRequest{ExecutionID: exec.ID, After: 5})
	if events, done, _ := sub2.Read(0); len(events) != 0 || !done {
		t.Fatalf("terminal at end: %d %v", len(events), done)
	}
	sub3, _ := rt.OpenStream(context.Background(), backend.StreamRequest{ExecutionID: exec.ID, After: 3})
	if events, done, _ := sub3.Read(1); len(events) != 1 || done {
		t.Fatalf("terminal, first read: %d %v", len(events), done)
	}
	if events, done, _ := sub3.Read(0); len(events) != 1 || !done || !events[0].Terminal() {
		t.Fatalf("terminal, second read: %d %v", len(events), done)
	}

	// Follow ends with ctx.Err() when its context ends first.
	exec2 := startScripted(t, rt, conv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	var last error
	for _, err := range backend.FollowExecution(ctx, rt, exec2.ID, 0) {
		last = err
	}
	if !errors.Is(last, context.DeadlineExceeded) {
		t.Fatalf("Follow ended with %v", last)
	}

	// Close ends live subscriptions.
	sub4, _ := rt.OpenStream(context.Background(), backend.StreamRequest{ExecutionID: exec2.ID, After: 2})
	wake := sub4.Ready()
	rt.Close()
	<-wake
	if _, _, err := sub4.Read(0); !errors.Is(err, backend.ErrClosed) {
		t.Fatalf("read after Close: %v", err)
	}
	if _, err := rt.GetExecution(context.Background(), exec2.ID); !errors.Is(err, backend.ErrClosed) {
		t.Fatalf("GetExecution after Close: %v", err)
	}
}
