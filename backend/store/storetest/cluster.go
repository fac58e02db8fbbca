package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// OpenNode opens a handle on one shared store (the same database each call of one test) as the
// named node. The suite closes what it opens.
type OpenNode func(t *testing.T, node string) store.Cluster

// RunCluster runs the cluster half of the contract (store.Cluster): leases with epochs,
// fencing, claims, commands and wake-ups. newShared must return a fresh, empty shared store
// each time it is called, as a function that opens node handles on it.
func RunCluster(t *testing.T, newShared func(t *testing.T) OpenNode) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(t *testing.T, open OpenNode)
	}{
		{"LeaseEpochs", testLeaseEpochs},
		{"ClaimFencesTheClaimedNode", testClaimFences},
		{"FencedBatchFailsAlone", testFencedBatchFailsAlone},
		{"TakenSequenceIsFenced", testTakenSequenceIsFenced},
		{"ClaimOnce", testClaimOnce},
		{"ClaimSeesCommitInFlight", testClaimSeesCommitInFlight},
		{"OwnedUnfinished", testOwnedUnfinished},
		{"RenewalDoesNotWaitForCommits", testRenewalDoesNotWaitForCommits},
		{"Commands", testCommands},
		{"AdmissionsAcrossNodes", testAdmissionsAcrossNodes},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, newShared(t)) })
	}
}

// openNode opens node on the shared store and closes it at the end of the test.
func openNode(t *testing.T, open OpenNode, node string) interface {
	store.Store
	store.Cluster
} {
	t.Helper()
	c := open(t, node)
	s, ok := c.(interface {
		store.Store
		store.Cluster
	})
	if !ok {
		t.Fatalf("%T is a store.Cluster but not a store.Store", c)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func acquire(t *testing.T, s store.Cluster, ttl time.Duration) int64 {
	t.Helper()
	epoch, err := s.AcquireLease(context.Background(), ttl)
	if err != nil {
		t.Fatalf("AcquireLease on %s: %v", s.Node(), err)
	}
	return epoch
}

// expire makes s's lease expire at once (it renews with a tiny ttl) and waits past it.
func expire(t *testing.T, s store.Cluster, epoch int64) {
	t.Helper()
	if err := s.RenewLease(context.Background(), epoch, time.Millisecond); err != nil {
		t.Fatalf("RenewLease on %s: %v", s.Node(), err)
	}
	time.Sleep(20 * time.Millisecond) // past the lease, by the store's clock too
}

func runningOf(n int, owner string) store.Execution {
	rec := execution(n, 1, api.ExecutionStateRunning, "")
	rec.Owner = owner
	return rec
}

// Each acquisition gives a greater epoch; renewing the current one works, renewing an older one
// is ErrFenced; an expired lease that nobody claimed is renewed.
func testLeaseEpochs(t *testing.T, open OpenNode) {
	a := openNode(t, open, "a")
	first := acquire(t, a, time.Hour)
	second := acquire(t, a, time.Hour)
	if second <= first {
		t.Fatalf("epochs %d then %d: want growing", first, second)
	}
	ctx := context.Background()
	if err := a.RenewLease(ctx, second, time.Hour); err != nil {
		t.Fatalf("renew the current epoch: %v", err)
	}
	if err := a.RenewLease(ctx, first, time.Hour); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("renew an older epoch: %v, want ErrFenced", err)
	}
	expire(t, a, second)
	if err := a.RenewLease(ctx, second, time.Hour); err != nil {
		t.Fatalf("renew an expired, unclaimed lease: %v", err)
	}
}

// Once another node claimed a node, every batch written under its epoch fails with ErrFenced and
// nothing of it is applied, and so does its renewal; the claimer's own batches commit; the
// claimed node's next epoch commits again.
func testClaimFences(t *testing.T, open OpenNode) {
	a, b := openNode(t, open, "a"), openNode(t, open, "b")
	ea, eb := acquire(t, a, time.Hour), acquire(t, b, time.Hour)
	if err := a.Commit(&store.Batch{Executions: []store.Execution{runningOf(1, "a")}, Events: []store.StoredEvent{event(executionID(1), 1, api.StandardEventTypeRunQueued)}, Lease: ea}); err != nil {
		t.Fatalf("commit under a's live epoch: %v", err)
	}
	expire(t, a, ea)
	claimed, err := b.ClaimExpired(context.Background())
	if err != nil || len(claimed) != 1 || claimed[0].Execution.ID != executionID(1) {
		t.Fatalf("b claimed %v, %v; want a's running execution", claimed, err)
	}
	late := &store.Batch{Events: []store.StoredEvent{event(executionID(1), 2, api.StandardEventTypeRunStarted)}, Lease: ea}
	if err := a.Commit(late); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("commit under a's claimed epoch: %v, want ErrFenced", err)
	}
	if last, err := a.LastSequence(executionID(1)); err != nil || last != 1 {
		t.Fatalf("after the fenced commit the log ends at %d (%v), want 1: nothing applied", last, err)
	}
	if err := a.RenewLease(context.Background(), ea, time.Hour); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("renew a's claimed epoch: %v, want ErrFenced", err)
	}
	if err := b.Commit(&store.Batch{Events: []store.StoredEvent{event(executionID(1), 2, api.StandardEventTypeRunFailed)}, Lease: eb}); err != nil {
		t.Fatalf("the claimer's commit: %v", err)
	}
	ea2 := acquire(t, a, time.Hour)
	if err := a.Commit(&store.Batch{Executions: []store.Execution{runningOf(2, "a")}, Lease: ea2}); err != nil {
		t.Fatalf("commit under a's new epoch: %v", err)
	}
	if err := a.Commit(&store.Batch{Executions: []store.Execution{runningOf(3, "a")}, Lease: ea}); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("commit under a's old epoch after a new one: %v, want ErrFenced", err)
	}
}

// A fenced batch submitted together with healthy ones fails alone: group commit never lets it
// fail its neighbours.
func testFencedBatchFailsAlone(t *testing.T, open OpenNode) {
	a := openNode(t, open, "a")
	old := acquire(t, a, time.Hour)
	current := acquire(t, a, time.Hour)
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		lease := current
		if i%5 == 0 {
			lease = old
		}
		wg.Add(1)
		req := &store.Request{Batch: &store.Batch{Executions: []store.Execution{runningOf(10+i, "a")}, Lease: lease}, Done: func(err error) { errs[i] = err; wg.Done() }}
		if err := a.Submit(req); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	for i, err := range errs {
		_, found, rerr := a.Execution(executionID(10 + i))
		if rerr != nil {
			t.Fatal(rerr)
		}
		if i%5 == 0 {
			if !errors.Is(err, store.ErrFenced) || found {
				t.Errorf("batch %d under the old epoch: %v, stored %v; want ErrFenced, nothing stored", i, err, found)
			}
		} else if err != nil || !found {
			t.Errorf("batch %d under the current epoch: %v, stored %v; want committed", i, err, found)
		}
	}
}

// A sequence another writer took is ErrFenced (permanent), not an error worth retrying.
func testTakenSequenceIsFenced(t *testing.T, open OpenNode) {
	a := openNode(t, open, "a")
	epoch := acquire(t, a, time.Hour)
	first := &store.Batch{Events: []store.StoredEvent{event(executionID(1), 1, api.StandardEventTypeRunQueued)}, Lease: epoch}
	if err := a.Commit(first); err != nil {
		t.Fatal(err)
	}
	again := &store.Batch{Events: []store.StoredEvent{event(executionID(1), 1, api.StandardEventTypeRunFailed)}, Lease: epoch}
	if err := a.Commit(again); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("a second event with sequence 1: %v, want ErrFenced", err)
	}
}

// Nodes racing to claim an expired node get its unfinished executions exactly once between
// them, with the claimer as their owner in the store; live nodes and finished executions are
// never claimed.
func testClaimOnce(t *testing.T, open OpenNode) {
	dead, b, c := openNode(t, open, "dead"), openNode(t, open, "b"), openNode(t, open, "c")
	edead := acquire(t, dead, time.Hour)
	acquire(t, b, time.Hour)
	acquire(t, c, time.Hour)
	finished := execution(3, 1, api.ExecutionStateSucceeded, "")
	finished.Owner = "dead"
	if err := dead.Commit(&store.Batch{Executions: []store.Execution{runningOf(1, "dead"), runningOf(2, "dead"), finished, runningOf(4, "b")}, Lease: edead}); err != nil {
		t.Fatal(err)
	}
	if got, err := c.ClaimExpired(context.Background()); err != nil || len(got) != 0 {
		t.Fatalf("claim while every lease is live: %d executions, %v", len(got), err)
	}
	expire(t, dead, edead)
	var wg sync.WaitGroup
	claimed := make([][]store.Execution, 2)
	for i, s := range []store.Cluster{b, c} {
		wg.Go(func() {
			got, err := s.ClaimExpired(context.Background())
			if err != nil {
				t.Errorf("ClaimExpired on %s: %v", s.Node(), err)
			}
			claimed[i] = got
		})
	}
	wg.Wait()
	if len(claimed[0]) != 0 && len(claimed[1]) != 0 {
		t.Fatalf("both nodes claimed: %d and %d executions", len(claimed[0]), len(claimed[1]))
	}
	got := append(claimed[0], claimed[1]...)
	if len(got) != 2 {
		t.Fatalf("claimed %d executions, want the dead node's 2 unfinished ones", len(got))
	}
	for _, rec := range got {
		if rec.Owner != "dead" {
			t.Errorf("claimed %s names owner %q, want the node that stopped", rec.Execution.ID, rec.Owner)
		}
	}
	for _, s := range []store.Cluster{b, c} {
		if again, err := s.ClaimExpired(context.Background()); err != nil || len(again) != 0 {
			t.Fatalf("a second claim by %s: %d executions, %v", s.Node(), len(again), err)
		}
	}
}

// A command reaches its owner (a notice, then PendingCommands) and its answer the poster (a
// notice, then CommandResult); only the first answer counts.
func testCommands(t *testing.T, open OpenNode) {
	poster, owner := openNode(t, open, "poster"), openNode(t, open, "owner")
	notices := make(chan store.Notice, 16)
	stop := owner.Watch(func(n store.Notice) { notices <- n })
	defer stop()
	results := make(chan store.Notice, 16)
	stopPoster := poster.Watch(func(n store.Notice) { results <- n })
	defer stopPoster()
	ctx := context.Background()
	id, err := poster.PostCommand(ctx, store.Command{Node: "owner", Kind: store.CommandCancel, ExecutionID: executionID(1), Body: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	awaitNotice(t, notices, func(n store.Notice) bool {
		return n.Kind == store.NoticeCommand && n.CommandID == id || n.ExecutionID == "" && n.CommandID == 0
	})
	pending, err := owner.PendingCommands(ctx)
	if err != nil || len(pending) != 1 || pending[0].ID != id || pending[0].Kind != store.CommandCancel {
		t.Fatalf("PendingCommands = %+v, %v", pending, err)
	}
	if err := owner.AnswerCommand(ctx, id, []byte(`"first"`)); err != nil {
		t.Fatal(err)
	}
	if err := owner.AnswerCommand(ctx, id, []byte(`"second"`)); err != nil {
		t.Fatalf("a second answer: %v, want ignored", err)
	}
	awaitNotice(t, results, func(n store.Notice) bool {
		return n.Kind == store.NoticeResult && n.CommandID == id || n.ExecutionID == "" && n.CommandID == 0
	})
	result, answered, err := poster.CommandResult(ctx, id)
	if err != nil || !answered || string(result) != `"first"` {
		t.Fatalf("CommandResult = %s, %v, %v; want the first answer", result, answered, err)
	}
	if pending, err := owner.PendingCommands(ctx); err != nil || len(pending) != 0 {
		t.Fatalf("PendingCommands after the answer = %+v, %v", pending, err)
	}
}

func awaitNotice(t *testing.T, ch <-chan store.Notice, want func(store.Notice) bool) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case n := <-ch:
			if want(n) {
				return
			}
		case <-timeout:
			t.Fatal("no notice within 10 s")
		}
	}
}
