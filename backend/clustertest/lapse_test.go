package clustertest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/postgres"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// heldStream is a subscription followed on its own goroutine: what it delivered, and how it
// ended.
type heldStream struct {
	events []backend.Event
	err    error
	ended  chan struct{}
	n      atomic.Int64 // events so far, for waiting on the first one
}

func holdStream(t *testing.T, n *node, id string) *heldStream {
	t.Helper()
	s := &heldStream{ended: make(chan struct{})}
	// Longer than the test's waits for its end, so that a stream that does not end is reported
	// as such, not as a context that ran out.
	ctx, cancel := context.WithTimeout(context.Background(), 2*testTimeout)
	t.Cleanup(cancel)
	go func() {
		defer close(s.ended)
		for e, err := range n.rt.Follow(ctx, id, 0) {
			if err != nil {
				s.err = err
				return
			}
			s.events = append(s.events, e)
			s.n.Add(1)
		}
	}()
	deadline := time.Now().Add(testTimeout)
	for s.n.Load() == 0 { // open, and past its replay: following live
		if time.Now().After(deadline) {
			t.Fatalf("no event of %s on %s", id, n.name)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return s
}

// A node that can no longer vouch for its lease (its renewals fail for a whole lease) ends every
// stream it serves, of its own executions and of other nodes' alike, with UNAVAILABLE and
// without a terminal event it cannot know, while it is still cut off: not when it comes back and
// learns it was fenced. New streams are refused the same way. A client resumes on the other node
// from its cursor and reads the rest of the log, the other node's run.failed included, without
// gap or duplicate. Once the node holds a lease again, it serves streams again.
func TestStreamsEndWhenTheNodeCannotVouchForItsLease(t *testing.T) {
	p := &blocker{}
	providers := func() []backend.Provider { return []backend.Provider{p, mock.New()} }
	b := startCluster(t, clusterOpts{providers: providers}, "b")[0]
	cut := &atomic.Bool{}
	a := openNode(t, b.dsn, "a", clusterOpts{
		providers: providers,
		wrap:      func(s *postgres.Store) store.Store { return unreachableLease{s, cut} },
	})
	conv := newConversation(t, a)
	onA := start(t, a, api.StartExecutionRequest{ConversationID: conv, ProviderID: blockerID, Input: "a's"})
	onB := start(t, b, api.StartExecutionRequest{ConversationID: conv, ProviderID: blockerID, Input: "b's"})
	own, tail := holdStream(t, a, onA.ID), holdStream(t, a, onB.ID)

	cut.Store(true)
	for name, s := range map[string]*heldStream{"of its own execution": own, "of b's execution": tail} {
		select {
		case <-s.ended:
		case <-time.After(testTimeout):
			t.Fatalf("a's stream %s is still open %s after its renewals stopped (lease %s)", name, testTimeout, testLease)
		}
		wantCode(t, s.err, backend.CodeUnavailable)
		if errors.Is(s.err, backend.ErrClosed) {
			t.Fatalf("a's stream %s ended as if the runtime closed: %v", name, s.err)
		}
		for _, e := range s.events {
			if e.Terminal() {
				t.Fatalf("a's stream %s delivered a terminal event: %s", name, typesOf(s.events))
			}
		}
	}
	for _, id := range []string{onA.ID, onB.ID} {
		_, err := a.rt.Subscribe(id, 0)
		wantCode(t, err, backend.CodeUnavailable)
	}

	// The client resumes on b from where a's stream ended: b claims a's execution and fails it.
	resumed := append(own.events, follow(t, b, onA.ID, own.events[len(own.events)-1].Sequence)...)
	checkComplete(t, "a's execution, resumed on b", resumed)
	if last := resumed[len(resumed)-1]; last.Type != api.StandardEventTypeRunFailed {
		t.Fatalf("a's execution ended on b with %s, want b's run.failed", last.Type)
	}

	cut.Store(false)
	waitReady(t, a)
	again := holdStream(t, a, onB.ID) // a serves streams again
	if _, err := b.rt.CancelExecution(ctxT(t), onB.ID, nil); err != nil {
		t.Fatal(err)
	}
	<-again.ended
	if again.err != nil {
		t.Fatalf("a's stream of b's execution after a holds a lease again: %v", again.err)
	}
	checkComplete(t, "b's execution, streamed on a after the outage", again.events)
	sameLog(t, "b's execution", follow(t, b, onB.ID, 0), again.events)
}
