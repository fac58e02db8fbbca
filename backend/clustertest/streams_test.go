package clustertest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

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
	subA, _ := a.rt.Streams().Subscribe(streams.Filter{ConversationID: conv}, 0)
	subB, _ := b.rt.Streams().Subscribe(streams.Filter{ConversationID: conv}, 0)
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
	cursor := a.rt.Streams().Cursor(scope, onA[3].Position)
	if pos, err := b.rt.Streams().ParseCursor(scope, cursor); err != nil || pos != onA[3].Position {
		t.Fatalf("node b reads node a's cursor %s as %d, %v", cursor, pos, err)
	}
}

func TestStreamMovesToAnotherNodeWithoutGapOrDuplicate(t *testing.T) {
	nodes := startCluster(t, clusterOpts{}, "a", "b", "c")
	a, b, c := nodes[0], nodes[1], nodes[2]
	conv := newConversation(t, a)
	subB, _ := b.rt.Streams().Subscribe(streams.Filter{}, 0)
	first := start(t, a, mockRequest(conv, "one two three four five", api.JSONObject{"delayMs": 2}))
	before, err := drainSub(t, subB, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Node b goes away (its runtime closes: its streams end, as at a shutdown); the client
	// resumes on node c from the last position it had.
	b.rt.Close()
	if _, err := subB.Read(10); !errors.Is(err, streams.ErrClosed) {
		t.Fatalf("a stream of a closed node: %v; want ErrClosed", err)
	}
	second := start(t, a, mockRequest(conv, "six seven eight", api.JSONObject{"delayMs": 2}))
	subC, _ := c.rt.Streams().Subscribe(streams.Filter{}, subB.Cursor())
	after, err := drainSub(t, subC, 1)
	if err != nil {
		t.Fatal(err)
	}
	all := append(before, after...)
	truth, err := a.rt.Streams().Log().ReadLog(store.LogQuery{AnyTenant: true, Limit: 1000})
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
