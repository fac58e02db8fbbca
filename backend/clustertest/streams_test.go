package clustertest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/streams"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The conversation and tenant streams on two nodes over one database: one order on every node,
// cursors that mean the same position on either, and a stream that moves to the other node
// when its node goes away without a lost or repeated event.

// drainSub reads sub until it has seen terminals terminal events (or ends), with a hang guard.
func drainSub(t *testing.T, sub *streams.Subscription, terminals int) ([]store.LogEntry, error) {
	t.Helper()
	var out []store.LogEntry
	deadline := time.After(testTimeout)
	for terminals > 0 {
		ready := sub.Ready()
		entries, err := sub.Read(64)
		if err != nil {
			return out, err
		}
		for _, e := range entries {
			out = append(out, e)
			if e.Event.Terminal() {
				terminals--
			}
		}
		if len(entries) > 0 {
			continue
		}
		select {
		case <-ready:
		case <-deadline:
			t.Fatalf("%d entries after %s, %d terminals still to come", len(out), testTimeout, terminals)
		}
	}
	return out, nil
}

func entryKeys(entries []store.LogEntry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = fmt.Sprintf("%d=%s:%d", e.Position, e.ExecutionID, e.Event.Sequence)
	}
	return out
}

func TestStreamsSeeOneOrderOnEveryNode(t *testing.T) {
	nodes := startCluster(t, clusterOpts{}, "a", "b")
	a, b := nodes[0], nodes[1]
	conv := newConversation(t, a)
	subA, _ := backend.StreamHub(a.rt).Subscribe(streams.Filter{ConversationID: conv}, 0)
	subB, _ := backend.StreamHub(b.rt).Subscribe(streams.Filter{ConversationID: conv}, 0)
	const each = 4
	var wg sync.WaitGroup
	for _, n := range nodes {
		for i := range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start(t, n, mockRequest(conv, fmt.Sprintf("%s %d alpha beta gamma", n.name, i), api.JSONObject{"delayMs": 1}))
			}()
		}
	}
	wg.Wait()
	onA, err := drainSub(t, subA, 2*each)
	if err != nil {
		t.Fatal(err)
	}
	onB, err := drainSub(t, subB, 2*each)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(entryKeys(onA)) != fmt.Sprint(entryKeys(onB)) {
		t.Fatalf("node a saw\n%v\nnode b saw\n%v", entryKeys(onA), entryKeys(onB))
	}
	last := map[string]int64{}
	for i, e := range onA {
		if i > 0 && e.Position <= onA[i-1].Position {
			t.Fatalf("position %d after %d", e.Position, onA[i-1].Position)
		}
		if e.Event.Sequence != last[e.ExecutionID]+1 {
			t.Fatalf("%s:%d after sequence %d", e.ExecutionID, e.Event.Sequence, last[e.ExecutionID])
		}
		last[e.ExecutionID] = e.Event.Sequence
	}
	// Both nodes' executions are on both streams.
	if len(last) != 2*each {
		t.Fatalf("%d executions on the stream; want %d", len(last), 2*each)
	}
	// A cursor is global: the same on both nodes.
	scope := streams.ConversationScope("", conv)
	cursor := backend.StreamHub(a.rt).Cursor(scope, onA[3].Position)
	if pos, err := backend.StreamHub(b.rt).ParseCursor(scope, cursor); err != nil || pos != onA[3].Position {
		t.Fatalf("node b reads node a's cursor %s as %d, %v", cursor, pos, err)
	}
}

func TestStreamMovesToAnotherNodeWithoutGapOrDuplicate(t *testing.T) {
	nodes := startCluster(t, clusterOpts{}, "a", "b")
	a, b := nodes[0], nodes[1]
	conv := newConversation(t, a)
	subB, _ := backend.StreamHub(b.rt).Subscribe(streams.Filter{}, 0)
	first := start(t, a, mockRequest(conv, "one two three four five", api.JSONObject{"delayMs": 2}))
	before, err := drainSub(t, subB, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Node b goes away (its runtime closes: its streams end, as at a shutdown); the client
	// resumes on node a from the last position it had.
	b.rt.Close()
	if _, err := subB.Read(10); !errors.Is(err, streams.ErrClosed) {
		t.Fatalf("a stream of a closed node: %v; want ErrClosed", err)
	}
	second := start(t, a, mockRequest(conv, "six seven eight", api.JSONObject{"delayMs": 2}))
	subA, _ := backend.StreamHub(a.rt).Subscribe(streams.Filter{}, subB.Cursor())
	after, err := drainSub(t, subA, 1)
	if err != nil {
		t.Fatal(err)
	}
	all := append(before, after...)
	truth, err := backend.StreamHub(a.rt).Log().ReadLog(store.LogQuery{AnyTenant: true, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(entryKeys(all)) != fmt.Sprint(entryKeys(truth.Entries)) {
		t.Fatalf("across the move the client saw\n%v\nthe log holds\n%v", entryKeys(all), entryKeys(truth.Entries))
	}
	if all[0].ExecutionID != first.ID || all[len(all)-1].ExecutionID != second.ID {
		t.Fatalf("first %s, last %s", all[0].ExecutionID, all[len(all)-1].ExecutionID)
	}
}

// A node that can no longer vouch for its lease ends its conversation and tenant streams too,
// and refuses new ones, while it is cut off; the client resumes on the other node from its
// cursor and reads the rest of the log (the other node's run.failed of the cut node's
// execution included); once the node holds a lease again it serves streams again.
func TestLogStreamsEndWhenTheNodeCannotVouchForItsLease(t *testing.T) {
	a, b, _, cut := cuttableCluster(t, nil)
	conv := newConversation(t, a)
	onA := start(t, a, api.StartExecutionRequest{ConversationID: conv, ProviderID: blockerID, Input: "a's"})
	sub, err := backend.StreamHub(a.rt).Subscribe(streams.Filter{ConversationID: conv}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var before []store.LogEntry
	for len(before) < 2 { // run.queued and run.started
		ready := sub.Ready()
		entries, err := sub.Read(10)
		if err != nil {
			t.Fatal(err)
		}
		before = append(before, entries...)
		if len(entries) == 0 {
			select {
			case <-ready:
			case <-time.After(testTimeout):
				t.Fatalf("only %d events of a's execution on a's stream", len(before))
			}
		}
	}
	cut.Store(true)
	deadline := time.After(testTimeout)
	for ended := false; !ended; {
		ready := sub.Ready()
		entries, err := sub.Read(10)
		switch {
		case errors.Is(err, streams.ErrEnded):
			ended = true
		case err != nil:
			t.Fatalf("a's stream ended with %v; want ErrEnded", err)
		case len(entries) > 0:
			before = append(before, entries...)
		default:
			select {
			case <-ready:
			case <-deadline:
				t.Fatalf("a's conversation stream is still open %s after its renewals stopped", testTimeout)
			}
		}
	}
	if _, err := backend.StreamHub(a.rt).Subscribe(streams.Filter{}, 0); !errors.Is(err, streams.ErrEnded) {
		t.Fatalf("a new stream on a while it cannot vouch: %v; want ErrEnded", err)
	}
	// Resumed on b from the cursor: b claims a's execution and fails it.
	onB, _ := backend.StreamHub(b.rt).Subscribe(streams.Filter{ConversationID: conv}, sub.Cursor())
	after, err := drainSub(t, onB, 1)
	if err != nil {
		t.Fatal(err)
	}
	all := append(before, after...)
	last := map[string]int64{}
	for _, e := range all {
		if e.Event.Sequence != last[e.ExecutionID]+1 {
			t.Fatalf("across the move: %s:%d after %d", e.ExecutionID, e.Event.Sequence, last[e.ExecutionID])
		}
		last[e.ExecutionID] = e.Event.Sequence
	}
	if end := all[len(all)-1]; end.ExecutionID != onA.ID || end.Event.Type != api.StandardEventTypeRunFailed {
		t.Fatalf("the stream ended with %s %s; want b's run.failed of a's execution", end.ExecutionID, end.Event.Type)
	}
	cut.Store(false)
	waitReady(t, a)
	deadline = time.After(testTimeout)
	for {
		if _, err := backend.StreamHub(a.rt).Subscribe(streams.Filter{}, 0); err == nil {
			break
		}
		select {
		case <-deadline:
			t.Fatal("a does not serve streams again after it holds a lease")
		case <-time.After(50 * time.Millisecond):
		}
	}
}
