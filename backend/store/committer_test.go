package store

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The group commit keeps submission order, makes writers wait (without deadlock) while
// MaxQueued requests are waiting, and reports every request exactly once. apply is the
// committer's only collaborator: here it records what it was given, in order.
func TestCommitterOrderAndBackPressure(t *testing.T) {
	var applied []int // only the commit goroutine appends
	c := NewCommitter(func(group []*Request) error {
		for _, req := range group {
			applied = append(applied, len(req.Batch.Conversations[0].ID))
		}
		return nil
	}, CommitterOptions{MaxQueued: 64})
	const n = 64 + 500
	var got []int64
	results := make(chan error, n)
	release, stalled := make(chan struct{}), make(chan struct{})
	var submitted atomic.Int64
	submitErr := make(chan error, 1)
	go func() {
		for i := range n {
			seq := int64(i + 1)
			b := &Batch{Conversations: []Conversation{{}}}
			b.Conversations[0].ID = string(make([]byte, i+1)) // its length says its place
			err := c.Submit(&Request{Batch: b, Done: func(err error) {
				if seq == 1 {
					close(stalled)
					<-release // stall the commit goroutine, so the queue fills up
				}
				got = append(got, seq) // the commit goroutine is the only writer of got
				results <- err
			}})
			if err != nil {
				submitErr <- err
				return
			}
			submitted.Add(1)
		}
		submitErr <- nil
	}()
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer c.Close()
	defer unblock() // before Close, which waits for the commit goroutine
	queued := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.queue)
	}
	// Once the commit goroutine holds its first group (however many it took), the queue fills
	// up behind it.
	select {
	case <-stalled:
	case <-time.After(30 * time.Second):
		t.Fatal("the first request was never committed")
	}
	deadline := time.Now().Add(30 * time.Second)
	for queued() < 64 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	before := submitted.Load()
	time.Sleep(20 * time.Millisecond)
	if q, after := queued(), submitted.Load(); q != 64 || after != before || after >= n {
		t.Fatalf("with the commit goroutine stalled: %d queued (want 64), submissions went %d → %d (want the writer blocked)", q, before, after)
	}
	unblock()
	if err := <-submitErr; err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	for i, seq := range got {
		if seq != int64(i+1) {
			t.Fatalf("request %d reported as %d-th", seq, i+1)
		}
	}
	for i, v := range applied {
		if v != i+1 {
			t.Fatalf("request %d applied as %d-th", v, i+1)
		}
	}
	if len(applied) != n {
		t.Fatalf("applied %d requests, want %d", len(applied), n)
	}
}

// A group that fails is retried one request at a time, so only the bad request fails; later
// requests of its chain fail with its error without being applied; Close drains, then refuses.
func TestCommitterRetriesAloneAndFailsChains(t *testing.T) {
	errBad := errors.New("bad batch")
	hold := make(chan struct{})
	var applied []string
	c := NewCommitter(func(group []*Request) error {
		if group[0].Batch.Conversations[0].ID == "hold" {
			<-hold
		}
		for _, req := range group {
			if req.Batch.Conversations[0].ID == "bad" {
				return errBad
			}
		}
		for _, req := range group {
			applied = append(applied, req.Batch.Conversations[0].ID)
		}
		return nil
	}, CommitterOptions{})
	var chain Chain
	results := make(chan string, 10)
	submit := func(name string, chained bool) {
		req := &Request{Batch: &Batch{Conversations: []Conversation{{}}}}
		req.Batch.Conversations[0].ID = name
		req.Done = func(err error) { results <- fmt.Sprintf("%s:%v", name, err) }
		if chained {
			req.Chain = &chain
		}
		if err := c.Submit(req); err != nil {
			t.Fatal(err)
		}
	}
	submit("hold", false) // the next four queue up behind it and form one group
	time.Sleep(10 * time.Millisecond)
	submit("first", true)
	submit("bad", true)
	submit("after", true)
	submit("other", false)
	close(hold)
	var got []string
	for range 5 {
		got = append(got, <-results)
	}
	want := []string{"hold:<nil>", "first:<nil>", "bad:bad batch", "after:bad batch", "other:<nil>"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("outcomes %v, want %v", got, want)
	}
	if fmt.Sprint(applied) != "[hold first other]" {
		t.Fatalf("applied %v, want [hold first other]", applied)
	}
	if chain.Err() != errBad {
		t.Fatalf("chain error %v, want %v", chain.Err(), errBad)
	}
	submit("later", true)
	if got := <-results; got != "later:bad batch" {
		t.Fatalf("a later batch of the failed chain: %s", got)
	}
	c.Close()
	if err := c.Submit(&Request{Batch: &Batch{}, Done: func(error) {}}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Submit after Close: %v, want ErrClosed", err)
	}
}

// A start (a request with a Deadline) held by a transaction whose end the store did not learn
// (ErrOutcomeUnknown: the connection dropped while COMMIT was on its way) may exist: it is
// tried again past its deadline and answered with the retry's outcome, never as "not applied"
// (a database stall that ended a transaction after its COMMIT reached the server left
// executions running that nobody would ever finish). A transaction that failed before it could
// commit still answers the deadline with ErrUnavailable.
func TestCommitterDeadlineAfterAnUnknownOutcome(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first error // the first transaction's error, returned once the deadline passed
		want  error // what the request is answered
	}{
		{"outcome unknown", fmt.Errorf("%w: conn closed", ErrOutcomeUnknown), nil},
		{"not applied", errors.New("conn refused"), ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deadline := time.Now().Add(50 * time.Millisecond)
			var calls atomic.Int32
			c := NewCommitter(func(group []*Request) error {
				if calls.Add(1) == 1 {
					time.Sleep(time.Until(deadline) + 10*time.Millisecond)
					return tc.first
				}
				if group[0].Attempts != 1 {
					return fmt.Errorf("the retry holds a request with %d attempts, want 1 (its inserts must tolerate its own rows)", group[0].Attempts)
				}
				return nil
			}, CommitterOptions{Transient: func(error) bool { return true }})
			defer c.Close()
			done := make(chan error, 1)
			if err := c.Submit(&Request{Batch: &Batch{}, Deadline: deadline, Done: func(err error) { done <- err }}); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
					t.Fatalf("answered %v, want %v", err, tc.want)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the request was never answered")
			}
		})
	}
}

// A group that keeps failing transiently is logged at its first attempt and at each power of
// two: visible in the logs without a line per retry.
func TestCommitterLogsTransientRetries(t *testing.T) {
	var calls atomic.Int32
	var logged []int
	c := NewCommitter(func([]*Request) error {
		if calls.Add(1) <= 9 {
			return errors.New("connection refused")
		}
		return nil
	}, CommitterOptions{
		Transient: func(error) bool { return true },
		LogRetry:  func(_ error, attempt, _ int) { logged = append(logged, attempt) }, // on the commit goroutine
	})
	if err := c.Commit(&Batch{Events: []StoredEvent{{ExecutionID: "e", Event: Event{Sequence: 1}}}}); err != nil {
		t.Fatalf("commit after nine transient failures: %v", err)
	}
	c.Close()
	if !slices.Equal(logged, []int{1, 2, 4, 8}) {
		t.Fatalf("logged attempts %v, want [1 2 4 8]", logged)
	}
}
