package storetest

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// holdable is a node handle whose commits a test can hold open and whose lock waits it can see
// (tests only; the PostgreSQL store has both in its export_test.go). Without them the claim
// race cannot be staged deterministically.
type holdable interface {
	// BeforeCommit makes the store call fn in each commit once everything but the final
	// COMMIT was sent (the fence taken, the rows written); set before the first commit.
	BeforeCommit(fn func())
	// LockWaiters counts the store's sessions (any node's) waiting on a lock right now.
	LockWaiters(ctx context.Context) (int, error)
}

// A claim sees every execution the claimed node committed, whatever the interleaving: node x's
// lease expired while one of its commits was in flight (the fence taken, a new running
// execution written, COMMIT not yet sent); the claim as y starts then and waits for that
// commit's lock on x's lease row; x's commit then succeeds (it was fenced before the claim),
// and the claim must return the new execution as well as the old one. Otherwise nobody owns
// the new execution: it stays running for good (issue 44, item 1).
func testClaimSeesCommitInFlight(t *testing.T, open OpenNode) {
	x, y := openNode(t, open, "x"), openNode(t, open, "y")
	hx, ok := x.(holdable)
	if !ok {
		t.Skipf("%T cannot hold a commit open (no BeforeCommit/LockWaiters): the interleaving cannot be staged", x)
	}
	holding, held, release := holdCommits(hx)
	ex := acquire(t, x, time.Hour)
	acquire(t, y, time.Hour)
	commit(t, x, &store.Batch{Executions: []store.Execution{runningOf(1, "x")}, Lease: ex})
	expire(t, x, ex)

	holding.Store(true)
	inFlight := make(chan error, 1)
	go func() {
		inFlight <- x.Commit(&store.Batch{Executions: []store.Execution{runningOf(2, "x")}, Lease: ex})
	}()
	<-held
	claimed := make(chan []store.Execution, 1)
	go func() {
		got, err := y.ClaimExpired(context.Background())
		if err != nil {
			t.Errorf("ClaimExpired on y: %v", err)
		}
		claimed <- got
	}()
	awaitLockWaiter(t, hx)
	close(release)
	if err := <-inFlight; err != nil {
		t.Fatalf("x's commit, fenced before the claim: %v, want committed", err)
	}
	var ids []string
	for _, rec := range <-claimed {
		ids = append(ids, rec.Execution.ID)
	}
	slices.Sort(ids)
	if want := []string{executionID(1), executionID(2)}; !slices.Equal(ids, want) {
		t.Fatalf("y claimed %v; want %v: the execution x committed while the claim waited too", ids, want)
	}
	if again, err := y.ClaimExpired(context.Background()); err != nil || len(again) != 0 {
		t.Fatalf("a second claim: %d executions, %v", len(again), err)
	}
	if err := x.Commit(&store.Batch{Executions: []store.Execution{runningOf(3, "x")}, Lease: ex}); err == nil {
		t.Fatal("x committed under its claimed epoch")
	}
}

// awaitLockWaiter returns once a session waits on a lock (the claim, on the held commit's
// lock), failing t if none does within a generous time.
func awaitLockWaiter(t *testing.T, h holdable) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := h.LockWaiters(context.Background())
		if err != nil {
			t.Fatalf("LockWaiters: %v", err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the claim never waited on the in-flight commit's lock")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// OwnedUnfinished lists a node's non-terminal executions, and after a claim the claimer's.
func testOwnedUnfinished(t *testing.T, open OpenNode) {
	a, b := openNode(t, open, "a"), openNode(t, open, "b")
	ea := acquire(t, a, time.Hour)
	acquire(t, b, time.Hour)
	finished := execution(2, 1, api.ExecutionStateSucceeded, "")
	finished.Owner = "a"
	commit(t, a, &store.Batch{Executions: []store.Execution{runningOf(1, "a"), finished, runningOf(3, "b")}, Lease: ea})
	owned := func(s store.Cluster) []string {
		t.Helper()
		recs, err := s.OwnedUnfinished(context.Background())
		if err != nil {
			t.Fatalf("OwnedUnfinished on %s: %v", s.Node(), err)
		}
		var ids []string
		for _, rec := range recs {
			ids = append(ids, rec.Execution.ID)
		}
		slices.Sort(ids)
		return ids
	}
	if got := owned(a); !slices.Equal(got, []string{executionID(1)}) {
		t.Fatalf("a owns %v unfinished, want its running one only", got)
	}
	expire(t, a, ea)
	if _, err := b.ClaimExpired(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := owned(a); len(got) != 0 {
		t.Fatalf("a still owns %v after b claimed it", got)
	}
	if got := owned(b); !slices.Equal(got, []string{executionID(1), executionID(3)}) {
		t.Fatalf("b owns %v unfinished, want its own and the one it claimed", got)
	}
}

// A renewal never waits for the node's own commits: a commit held open (its fence taken) does
// not hold up the renewal of the same epoch. Otherwise a node committing back to back under
// overload starves its own renewals and is taken over while alive (issue 44).
func testRenewalDoesNotWaitForCommits(t *testing.T, open OpenNode) {
	x := openNode(t, open, "x")
	hx, ok := x.(holdable)
	if !ok {
		t.Skipf("%T cannot hold a commit open (no BeforeCommit/LockWaiters)", x)
	}
	holding, held, release := holdCommits(hx)
	ex := acquire(t, x, time.Hour)
	holding.Store(true)
	inFlight := make(chan error, 1)
	go func() {
		inFlight <- x.Commit(&store.Batch{Executions: []store.Execution{runningOf(1, "x")}, Lease: ex})
	}()
	<-held
	defer func() {
		close(release)
		if err := <-inFlight; err != nil {
			t.Errorf("the held commit: %v", err)
		}
	}()
	renewed := make(chan error, 1)
	go func() { renewed <- x.RenewLease(context.Background(), ex, time.Hour) }()
	for {
		select {
		case err := <-renewed:
			if err != nil {
				t.Fatalf("RenewLease while a commit is in flight: %v", err)
			}
			return
		default:
		}
		n, err := hx.LockWaiters(context.Background())
		if err != nil {
			t.Fatalf("LockWaiters: %v", err)
		}
		if n > 0 {
			t.Fatal("the renewal waits on a lock of the node's own commit in flight")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// holdCommits makes the next commit of h that starts after holding is set stop before its
// COMMIT (its fence taken): held is closed then, and the commit goes on once release is closed.
func holdCommits(h holdable) (holding *atomic.Bool, held, release chan struct{}) {
	holding = new(atomic.Bool)
	held, release = make(chan struct{}), make(chan struct{})
	h.BeforeCommit(func() {
		if holding.CompareAndSwap(true, false) {
			close(held)
			<-release
		}
	})
	return holding, held, release
}
