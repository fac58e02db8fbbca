package sdk_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Connection reuse: a service that starts executions and follows them the portable way
// (StartExecution, then Events to the terminal event) must get its connections back from each
// finished stream, as Run does, or every execution costs a new TCP connection and, on TLS, a
// full handshake. These tests count what the real server accepts.

// wireSetup is how client and server talk: plain HTTP/1.1, or TLS with HTTP/1.1 or HTTP/2.
type wireSetup struct {
	name  string
	tls   bool
	http2 bool
	proto string // what every request must arrive as
}

var wireSetups = []wireSetup{
	{name: "http1.1", proto: "HTTP/1.1"},
	{name: "tls-http1.1", tls: true, proto: "HTTP/1.1"},
	{name: "tls-http2", tls: true, http2: true, proto: "HTTP/2.0"},
}

// countingServer is the real server (startServerOn) behind a listener that counts the
// connections it accepts, and on TLS the handshakes it makes.
type countingServer struct {
	*testServer
	accepted   atomic.Int64
	handshakes atomic.Int64
	// protos counts requests per protocol version as the server saw them.
	mu     sync.Mutex
	protos map[string]int
}

func newCountingServer(t *testing.T, wire wireSetup) *countingServer {
	t.Helper()
	cs := &countingServer{protos: map[string]int{}}
	srv, err := startServerOn(t.TempDir(), 0, func(h http.Handler) *httptest.Server {
		hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			cs.mu.Lock()
			cs.protos[r.Proto]++
			cs.mu.Unlock()
			h.ServeHTTP(w, r)
		}))
		hs.Listener = &countingListener{Listener: hs.Listener, n: &cs.accepted}
		if !wire.tls {
			hs.Start()
			return hs
		}
		hs.EnableHTTP2 = wire.http2
		// Called once per ClientHello: one handshake. httptest keeps this config and adds its
		// certificate; no session tickets are offered back by the client (no ClientSessionCache),
		// so every handshake is a full one.
		hs.TLS = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cs.handshakes.Add(1)
			return nil, nil
		}}
		hs.StartTLS()
		return hs
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cs.testServer = srv
	return cs
}

// requestsNotOn is how many requests arrived with another protocol than proto.
func (cs *countingServer) requestsNotOn(proto string) map[string]int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	other := map[string]int{}
	for p, n := range cs.protos {
		if p != proto {
			other[p] = n
		}
	}
	return other
}

type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// connClient is an SDK client as a Go service would build it: one transport with room in its
// pool for every worker (docs/performance-log.md, "Notes for client and operator code"), TLS
// trusting the test server's certificate, HTTP/2 where the server offers it.
func connClient(t *testing.T, cs *countingServer, wire wireSetup) (*sdk.Client, *http.Transport) {
	t.Helper()
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 64
	if wire.tls {
		transport.TLSClientConfig = &tls.Config{RootCAs: cs.http.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
		transport.ForceAttemptHTTP2 = wire.http2
	}
	t.Cleanup(transport.CloseIdleConnections)
	return newClient(t, cs.URL, sdk.WithHTTPClient(&http.Client{Transport: transport})), transport
}

// connWork is how many executions run, on how many workers.
type connWork struct {
	name       string
	executions int
	workers    int
}

// connCount is what one way of running the work cost the server.
type connCount struct{ accepted, handshakes int64 }

func (c connCount) String() string {
	return fmt.Sprintf("%d connections, %d TLS handshakes", c.accepted, c.handshakes)
}

// runWork runs the work, one execution per call of one, from a client of its own, and returns
// the connections and handshakes the server accepted for it (its conversation's creation
// included).
func runWork(t *testing.T, cs *countingServer, wire wireSetup, work connWork,
	one func(ctx context.Context, c *sdk.Client, req api.StartExecutionRequest) error) connCount {
	t.Helper()
	c, transport := connClient(t, cs, wire)
	defer transport.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	accepted0, handshakes0 := cs.accepted.Load(), cs.handshakes.Load()
	conv, err := c.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	req := api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "hello runtime",
		Config: api.JSONObject{"delayMs": 0}}
	var next atomic.Int64
	errs := make(chan error, work.workers)
	var wg sync.WaitGroup
	for range work.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(work.executions) {
				if err := one(ctx, c, req); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return connCount{cs.accepted.Load() - accepted0, cs.handshakes.Load() - handshakes0}
}

// viaRun is the one-call way: start and stream in one request.
func viaRun(ctx context.Context, c *sdk.Client, req api.StartExecutionRequest) error {
	res, err := c.Run(ctx, req, sdk.RunHandlers{})
	if err != nil {
		return err
	}
	if !res.Succeeded() {
		return fmt.Errorf("Run: execution %s ended %s", res.Execution.ID, res.Execution.State)
	}
	return nil
}

// viaStartAndEvents is the portable way: StartExecution, then Events to the terminal event.
func viaStartAndEvents(ctx context.Context, c *sdk.Client, req api.StartExecutionRequest) error {
	exec, err := c.StartExecution(ctx, req)
	if err != nil {
		return err
	}
	var last api.StandardEventType
	for e, err := range c.Events(ctx, exec.ID, 0) {
		if err != nil {
			return err
		}
		last = e.Type
	}
	if last != api.StandardEventTypeRunCompleted {
		return fmt.Errorf("Events of %s ended after %q", exec.ID, last)
	}
	return nil
}

// connSlack is how many connections more than Run's the portable way may open: a handful, for
// the moments where every idle connection is busy and the pool dials one more.
const connSlack = 4

// A finished event stream gives its connection back: StartExecution + Events opens no more
// connections (and on TLS makes no more handshakes) than Run for the same work, sequentially and
// on 8 workers, on HTTP/1.1 and HTTP/2. Before the fix the stream cut its connection after the
// terminal event, so HTTP/1.1 opened a new one for most executions.
func TestFinishedStreamsLeaveTheirConnectionsReusable(t *testing.T) {
	for _, wire := range wireSetups {
		t.Run(wire.name, func(t *testing.T) {
			cs := newCountingServer(t, wire)
			for _, work := range []connWork{{"sequential", 40, 1}, {"concurrent", 200, 8}} {
				t.Run(work.name, func(t *testing.T) {
					run := runWork(t, cs, wire, work, viaRun)
					portable := runWork(t, cs, wire, work, viaStartAndEvents)
					t.Logf("%d executions on %d workers: Run %v; StartExecution+Events %v",
						work.executions, work.workers, run, portable)
					if portable.accepted > run.accepted+connSlack {
						t.Errorf("StartExecution+Events opened %d connections for %d executions, Run %d: finished streams do not give their connections back",
							portable.accepted, work.executions, run.accepted)
					}
					if wire.tls && portable.handshakes > run.handshakes+connSlack {
						t.Errorf("StartExecution+Events made %d TLS handshakes for %d executions, Run %d",
							portable.handshakes, work.executions, run.handshakes)
					}
					if work.workers == 1 && portable.accepted > 2 {
						t.Errorf("one worker, one execution at a time: StartExecution+Events opened %d connections, want 1 (2 at most)", portable.accepted)
					}
				})
			}
			if other := cs.requestsNotOn(wire.proto); len(other) > 0 {
				t.Errorf("requests arrived as %v, want all on %s", other, wire.proto)
			}
		})
	}
}

// Through a proxy that passes the whole stream but then holds the connection open (the answer
// never ends), Events still ends after the terminal event, each event once: the stream stops
// reading for the end shortly after and leaves the connection.
func TestEventsLeavesAStreamThatDoesNotEnd(t *testing.T) {
	g := newNetRig(t)
	g.proxy.add("held open", onStream, -1, editFrames(dropEvents("no such event"), true))
	ctx := bounded(t)
	exec, err := g.client.StartExecution(ctx, g.startReq(api.JSONObject{"delayMs": 1}))
	if err != nil {
		t.Fatal(err)
	}
	var seen []api.RuntimeEvent
	for e, err := range g.client.Events(ctx, exec.ID, 0) {
		if err != nil {
			t.Fatalf("Events: %v (saw %v)", err, types(seen))
		}
		seen = append(seen, e)
	}
	g.exactlyOnce(t, exec.ID, seen)
	// The proxy learns that the client left when its server notices the closed connection.
	for g.proxy.abandoned("held open") != 1 {
		if !sleepCtx(ctx, 10*time.Millisecond) {
			t.Fatalf("the client left %d streams held open, want 1", g.proxy.abandoned("held open"))
		}
	}
}

// A caller that stops the loop at the terminal event (break on sdk.IsTerminalEvent) keeps the
// connection like one that lets the loop end; one that stops before it cuts the connection, as
// documented. TLS with HTTP/1.1 is where a cut always costs a connection (the end of the body
// comes in a TLS record of its own, never read with the terminal event).
func TestStoppingAtTheTerminalEventKeepsTheConnection(t *testing.T) {
	wire := wireSetup{name: "tls-http1.1", tls: true, proto: "HTTP/1.1"}
	cs := newCountingServer(t, wire)
	work := connWork{"sequential", 20, 1}
	stopAt := func(stop func(api.RuntimeEvent) bool) func(context.Context, *sdk.Client, api.StartExecutionRequest) error {
		return func(ctx context.Context, c *sdk.Client, req api.StartExecutionRequest) error {
			exec, err := c.StartExecution(ctx, req)
			if err != nil {
				return err
			}
			for e, err := range c.Events(ctx, exec.ID, 0) {
				if err != nil {
					return err
				}
				if stop(e) {
					break
				}
			}
			// The execution goes on without a watcher; wait for it to end, as its connections
			// would otherwise be counted with the next one's.
			_, err = c.WaitForTerminal(ctx, exec.ID)
			return err
		}
	}
	atTerminal := runWork(t, cs, wire, work, stopAt(func(e api.RuntimeEvent) bool { return sdk.IsTerminalEvent(e.Type) }))
	atFirst := runWork(t, cs, wire, work, stopAt(func(api.RuntimeEvent) bool { return true }))
	t.Logf("%d executions, one at a time: stopping at the terminal event %v; at the first event %v", work.executions, atTerminal, atFirst)
	if atTerminal.accepted > 2 {
		t.Errorf("stopping at the terminal event opened %d connections for %d executions, want 1 (2 at most)", atTerminal.accepted, work.executions)
	}
	// The documented cut, which also shows that this test tells the two apart.
	if atFirst.accepted <= atTerminal.accepted+connSlack {
		t.Errorf("stopping at the first event opened %d connections for %d executions, at the terminal event %d: the early stop did not cut the stream?",
			atFirst.accepted, work.executions, atTerminal.accepted)
	}
}
