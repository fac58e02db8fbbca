package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
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
			sameEvents(t, name, seen, truth)
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
