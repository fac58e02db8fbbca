package sdk_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// announcedHeartbeat is the server's heartbeat in the tests below: a second, much shorter than
// the 15 s the client would count on if the server did not say.
const announcedHeartbeat = time.Second

// deadStreamBound bounds the tests below: a client that ignored the announcement would notice
// the dead stream after 45 s (three default intervals), far beyond it; one that follows it
// needs about three seconds. It is a bound against that failure, not a speed check.
const deadStreamBound = 20 * time.Second

// newAnnouncingRig is a netRig whose server beats every announcedHeartbeat and whose client
// through the proxy is given no heartbeat option: it knows the interval only from the
// Harness-Heartbeat-Ms header of each stream.
func newAnnouncingRig(t *testing.T) *netRig {
	t.Helper()
	srv := newTestServerWithHeartbeat(t, announcedHeartbeat)
	p := newNetProxy(t, srv.URL)
	direct := newClient(t, srv.URL)
	conv, err := direct.CreateConversation(t.Context(), api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return &netRig{srv: srv, proxy: p, client: newClient(t, p.URL), direct: direct, conv: conv.ID}
}

// noticed records when the client first abandoned the stream the proxy silenced.
type noticed struct {
	once sync.Once
	at   time.Time
}

func (n *noticed) check(g *netRig, rule string) bool {
	if g.proxy.abandoned(rule) < 1 {
		return false
	}
	n.once.Do(func() { n.at = time.Now() })
	return true
}

// A dead stream behind a server that beats every second is noticed after about three seconds
// of silence with no option, and the stream resumes: on the events operation and on Run's
// streamed start.
func TestAnnouncedHeartbeatNoticesADeadStreamWithoutOptions(t *testing.T) {
	t.Run("Events", func(t *testing.T) {
		g := newAnnouncingRig(t)
		// run.queued, run.started and action.required pass; then no byte, heartbeats withheld.
		g.proxy.add("silent", on(routeStream), 1, editFrames(silentAfter(3), true))
		ctx, cancel := context.WithTimeout(t.Context(), deadStreamBound)
		defer cancel()
		exec, err := g.direct.StartExecution(ctx, g.startReq(api.JSONObject{"requireApproval": true}))
		if err != nil {
			t.Fatal(err)
		}
		var n noticed
		// The approval is given only once the client left the silent stream and came back: until
		// then the execution waits, so nothing but dead-stream detection ends the loop below.
		approved := g.approveWhen(t, ctx, exec.ID, func() bool { return n.check(g, "silent") && g.proxy.seen(routeStream) >= 2 })
		var seen []api.RuntimeEvent
		var silentSince time.Time
		for e, err := range g.client.Events(ctx, exec.ID, 0) {
			if err != nil {
				t.Fatalf("Events: %v (saw %v): the dead stream was not noticed within %v", err, types(seen), deadStreamBound)
			}
			seen = append(seen, e)
			if e.Type == api.StandardEventTypeActionRequired {
				silentSince = time.Now() // the last event the silent stream passes
			}
		}
		if err := <-approved; err != nil {
			t.Fatal(err)
		}
		g.exactlyOnce(t, exec.ID, seen)
		t.Logf("the stream fell silent and was left %v later (heartbeat %v announced, no option)", n.at.Sub(silentSince).Round(100*time.Millisecond), announcedHeartbeat)
	})

	t.Run("Run", func(t *testing.T) {
		g := newAnnouncingRig(t)
		// The streamed start passes run.queued, run.started and action.required, then falls
		// silent for good. Run answers the approval; the provider then takes five seconds to
		// write its one chunk, so the stream is dead for longer than three announced heartbeats
		// before the execution ends, and the replay alone cannot finish the run sooner.
		g.proxy.add("silent", on(routeStartStream), 1, editFrames(silentAfter(3), true))
		ctx, cancel := context.WithTimeout(t.Context(), deadStreamBound)
		defer cancel()
		var seen []api.RuntimeEvent
		handlers := approve
		handlers.OnEvent = func(e api.RuntimeEvent) { seen = append(seen, e) }
		req := api.StartExecutionRequest{ConversationID: g.conv, ProviderID: "mock", Input: "x",
			Config: api.JSONObject{"requireApproval": true, "delayMs": 5000, "prefix": ""}}
		res, err := g.client.Run(ctx, req, handlers)
		if err != nil || !res.Succeeded() || res.Output != "x" {
			t.Fatalf("Run = %s %q, %v (saw %v): the dead start stream was not noticed within %v", res.Execution.State, res.Output, err, types(seen), deadStreamBound)
		}
		g.exactlyOnce(t, res.Execution.ID, seen)
		if g.proxy.seen(routeStream) < 1 {
			t.Fatalf("execution %s: Run never resumed through the events operation", res.Execution.ID)
		}
		// The proxy learns that the client left when its server notices the closed connection.
		for g.proxy.abandoned("silent") != 1 {
			if !sleepCtx(ctx, 10*time.Millisecond) {
				t.Fatalf("the client left %d silent start streams, want 1", g.proxy.abandoned("silent"))
			}
		}
	})
}
