package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The conversation and tenant streams through the same bad networks as an execution's stream:
// the faulty gateway (cuts, rewound cursors, 503/429) and netProxy (dead and lossy streams).
// Each checks that the caller saw exactly the events the server committed, once each, in the
// server's order.

const (
	routeConversationStream = "GET /v1/conversations/{id}/events SSE"
	routeTenantStream       = "GET /v1/events SSE"
)

// collect follows until it has seen terminals terminal events, then stops the loop. It runs
// on a goroutine of its own: an error is reported with t.Errorf (t.Fatalf would end only that
// goroutine, and the test would wait for it for ever) and ends the collection.
func collect(t *testing.T, ctx context.Context, seq func(func(sdk.StreamEvent, error) bool), terminals int) []sdk.StreamEvent {
	t.Helper()
	var out []sdk.StreamEvent
	for e, err := range seq {
		if err != nil {
			t.Errorf("follow: %v (after %d events)", err, len(out))
			return out
		}
		out = append(out, e)
		if e.Gap == nil && sdk.IsTerminalEvent(e.Event.Type) {
			if terminals--; terminals == 0 {
				break
			}
		}
	}
	return out
}

// conversationTruth pages through the conversation's stored events, straight from the server.
func conversationTruth(t *testing.T, c *sdk.Client, conv string, opts sdk.FollowOptions) ([]api.RuntimeEvent, string) {
	t.Helper()
	var out []api.RuntimeEvent
	opts.After = "0"
	for {
		page, err := c.ReplayConversation(t.Context(), conv, opts, 7)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Events) == 0 {
			return out, page.NextCursor
		}
		out = append(out, page.Events...)
		opts.After = page.NextCursor
	}
}

func sameEvents(t *testing.T, label string, got []sdk.StreamEvent, want []api.RuntimeEvent) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: the caller saw %d events, the server committed %d", label, len(got), len(want))
	}
	for i := range got {
		if got[i].Gap != nil || got[i].Event.ID != want[i].ID {
			t.Fatalf("%s: event %d is %s; the server's is %s", label, i, got[i].Event.ID, want[i].ID)
		}
	}
}

// sameEventsEachExecutionInOrder is sameEvents where only each execution's own events must be
// in the server's order.
func sameEventsEachExecutionInOrder(t *testing.T, label string, got []sdk.StreamEvent, want []api.RuntimeEvent) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: the caller saw %d events, the server committed %d", label, len(got), len(want))
	}
	next := map[string][]api.RuntimeEvent{}
	for _, e := range want {
		next[e.ExecutionID] = append(next[e.ExecutionID], e)
	}
	for i, e := range got {
		queue := next[e.Event.ExecutionID]
		if e.Gap != nil || len(queue) == 0 || queue[0].ID != e.Event.ID {
			t.Fatalf("%s: event %d is %s; its execution's next on the server is %v", label, i, e.Event.ID, queue[:min(1, len(queue))])
		}
		next[e.Event.ExecutionID] = queue[1:]
	}
}

// startMany starts n mock executions in conv at once (straight to the server).
func startMany(t *testing.T, c *sdk.Client, conv string, n int, seed uint64) {
	t.Helper()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.StartExecution(t.Context(), api.StartExecutionRequest{ConversationID: conv, ProviderID: "mock",
				Input: fmt.Sprintf("seed %d turn %d with a few more words", seed, i), Config: api.JSONObject{"delayMs": int(seed) % 3}})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}

func TestFollowConversationExactlyOnceUnderInjectedFaults(t *testing.T) {
	const runs, perRun = 12, 3
	srv := newTestServer(t)
	direct := newClient(t, srv.URL)
	var total faultCounts
	for seed := uint64(1); seed <= runs; seed++ {
		gw := newFaultyGateway(srv.URL, seed)
		gateway := httptest.NewServer(gw)
		c := newClient(t, gateway.URL)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a bound against hangs
		conv, err := direct.CreateConversation(ctx, api.CreateConversationRequest{})
		if err != nil {
			t.Fatal(err)
		}
		// The tenant's lifecycle events of this run, followed through the gateway from now.
		now, err := direct.ReplayTenant(ctx, sdk.FollowOptions{}, 1)
		if err != nil {
			t.Fatal(err)
		}
		var tenant []sdk.StreamEvent
		tenantDone := make(chan struct{})
		go func() {
			defer close(tenantDone)
			tenant = collect(t, ctx, c.FollowTenant(ctx, sdk.FollowOptions{After: now.NextCursor, Lifecycle: true, Conversation: conv.ID}), perRun)
		}()
		done := make(chan []sdk.StreamEvent)
		go func() { done <- collect(t, ctx, c.FollowConversation(ctx, conv.ID, sdk.FollowOptions{}), perRun) }()
		startMany(t, direct, conv.ID, perRun, seed)
		seen := <-done
		<-tenantDone
		cancel()
		if t.Failed() {
			t.FailNow()
		}
		truth, _ := conversationTruth(t, direct, conv.ID, sdk.FollowOptions{})
		sameEvents(t, fmt.Sprintf("seed %d, conversation", seed), seen, truth)
		lifecycle, _ := conversationTruth(t, direct, conv.ID, sdk.FollowOptions{Lifecycle: true})
		sameEvents(t, fmt.Sprintf("seed %d, tenant lifecycle", seed), tenant, lifecycle)
		gateway.Close()
		total.add(gw.counts)
	}
	t.Logf("fault injection: %d runs, %d stream cuts, %d rewound cursors, %d 503/429 answers", runs, total.streamCuts, total.rewoundCursors, total.throttled)
	if total.streamCuts == 0 || total.rewoundCursors == 0 || total.throttled == 0 {
		t.Fatalf("some fault was never injected: %+v", total)
	}
}

func TestFollowSurvivesDeadAndLossyStreams(t *testing.T) {
	for name, setup := range map[string]func(g *netRig){
		// Two events pass, then nothing, heartbeats included: dropped after three intervals.
		"silent after two events": func(g *netRig) {
			g.proxy.add("fault", on(routeConversationStream), 1, editFrames(silentAfter(2), true))
		},
		// Every text delta lost on the first connection: the next sequence gives it away.
		"deltas lost": func(g *netRig) {
			g.proxy.add("fault", on(routeConversationStream), 1, editFrames(dropEvents("output.text.delta"), true))
		},
		// Every frame twice, and the one before again.
		"duplicates": func(g *netRig) {
			g.proxy.add("fault", on(routeConversationStream), 1, editFrames(repeatEvents(), false))
		},
		"cut answers": func(g *netRig) {
			g.proxy.add("fault", on(routeConversationStream), 2, cutBody)
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := newNetRig(t)
			setup(g)
			ctx := bounded(t)
			done := make(chan []sdk.StreamEvent)
			go func() { done <- collect(t, ctx, g.client.FollowConversation(ctx, g.conv, sdk.FollowOptions{}), 2) }()
			startMany(t, g.direct, g.conv, 2, 1)
			seen := <-done
			if t.Failed() {
				t.FailNow()
			}
			truth, _ := conversationTruth(t, g.direct, g.conv, sdk.FollowOptions{})
			if name == "deltas lost" {
				// A lost message shows only at its execution's next one, after messages of
				// other executions may have been yielded: it comes late, nothing twice.
				sameEventsEachExecutionInOrder(t, name, seen, truth)
			} else {
				sameEvents(t, name, seen, truth)
			}
			if g.proxy.hits("fault") == 0 {
				t.Fatal("the fault was never applied")
			}
		})
	}
}

func TestFollowRefusesWhatRetryingCannotFix(t *testing.T) {
	srv := newTestServer(t)
	c := newClient(t, srv.URL)
	ctx := bounded(t)
	for e, err := range c.FollowConversation(ctx, "conv_00000000000000000000000000000000", sdk.FollowOptions{}) {
		if !errors.Is(err, sdk.ErrNotFound) {
			t.Fatalf("unknown conversation: %+v, %v; want ErrNotFound", e, err)
		}
	}
	conv, _ := c.CreateConversation(ctx, api.CreateConversationRequest{})
	for e, err := range c.FollowConversation(ctx, conv.ID, sdk.FollowOptions{After: "bogus"}) {
		if !errors.Is(err, sdk.ErrValidation) {
			t.Fatalf("a malformed cursor: %+v, %v; want a validation error", e, err)
		}
	}
}

// A message lost where executions interleave: the loss shows only at its execution's next
// message, after the stream has yielded (and its cursor moved past) messages of the other
// one. The follow must resume from the lost execution's own cursor, not the stream's; from
// the stream's, the lost message can never come again and the follow waits for ever.
func TestFollowRecoversAMessageLostBetweenOtherExecutions(t *testing.T) {
	g := newNetRig(t)
	ctx := bounded(t)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			_, err := g.direct.StartExecution(ctx, api.StartExecutionRequest{ConversationID: g.conv, ProviderID: "mock",
				Input: fmt.Sprintf("turn %d of two running side by side", i), Config: api.JSONObject{"delayMs": 15}})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// The stream replays what is stored, so wait for both to finish: then the replay, and the
	// frame the proxy drops, are known in advance.
	if got := collect(t, ctx, g.direct.FollowConversation(ctx, g.conv, sdk.FollowOptions{}), 2); t.Failed() {
		t.Fatalf("waiting for both executions: %d events", len(got))
	}
	truth, _ := conversationTruth(t, g.direct, g.conv, sdk.FollowOptions{})
	lost := slices.IndexFunc(truth, func(e api.RuntimeEvent) bool { return e.Type == "output.text.delta" })
	own := slices.IndexFunc(truth[lost+1:], func(e api.RuntimeEvent) bool { return e.ExecutionID == truth[lost].ExecutionID })
	if lost < 0 || own <= 0 {
		t.Fatalf("the two executions' messages did not interleave after the first delta (at %d, its execution's next %d later); the test needs them to", lost, own)
	}

	g.proxy.add("fault", on(routeConversationStream), 1, editFrames(dropFirst("output.text.delta"), false))
	seen := collect(t, ctx, g.client.FollowConversation(ctx, g.conv, sdk.FollowOptions{}), 2)
	if t.Failed() {
		t.FailNow()
	}
	sameEventsEachExecutionInOrder(t, "first delta lost", seen, truth)
	if at := slices.IndexFunc(seen, func(e sdk.StreamEvent) bool { return e.Event.ID == truth[lost].ID }); at <= lost {
		t.Fatalf("the lost message came at %d, not after the other execution's messages (server position %d): was it lost at all?", at, lost)
	}
	if g.proxy.seen(routeConversationStream) < 2 {
		t.Fatalf("%d stream connections; the loss should have made the follow reconnect", g.proxy.seen(routeConversationStream))
	}
}
