package sdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// faultyGateway is an HTTP proxy in front of the real server that injects the faults of the
// issue: (a) it cuts event streams at random byte offsets, (b) it rewinds the cursor of
// reconnecting streams so already delivered events are sent again, (c) it answers some
// requests 503 or 429 with Retry-After itself, and (d) it forwards some starts and action
// answers, which the server applies, then drops the answer by closing the client's connection.
//
// No request path gets more than maxFaultsInARow faults in a row, so a client that retries
// enough always gets through; what is tested is that getting through never costs a lost,
// duplicated or reordered event or a second execution.
type faultyGateway struct {
	upstream *httputil.ReverseProxy

	mu       sync.Mutex
	rng      *rand.Rand
	inARow   map[string]int // consecutive faults per "METHOD path"
	counts   faultCounts
	startsBy map[string]map[string]bool // conversation id → execution ids the server answered for starts
}

const maxFaultsInARow = 2

type faultCounts struct {
	streamCuts, rewoundCursors, throttled, droppedStarts, droppedResponds int
}

func (c faultCounts) total() int {
	return c.streamCuts + c.rewoundCursors + c.throttled + c.droppedStarts + c.droppedResponds
}

func (c *faultCounts) add(o faultCounts) {
	c.streamCuts += o.streamCuts
	c.rewoundCursors += o.rewoundCursors
	c.throttled += o.throttled
	c.droppedStarts += o.droppedStarts
	c.droppedResponds += o.droppedResponds
}

func newFaultyGateway(upstream string, seed uint64) *faultyGateway {
	target, err := url.Parse(upstream)
	if err != nil {
		panic(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorLog = log.New(io.Discard, "", 0) // cut streams are the point, not news
	return &faultyGateway{
		upstream: rp,
		rng:      rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		inARow:   map[string]int{},
		startsBy: map[string]map[string]bool{},
	}
}

// maybe decides, for the request identified by key, whether to inject a fault with
// probability p, respecting maxFaultsInARow. It holds the lock for the random draws.
func (g *faultyGateway) maybe(key string, p float64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inARow[key] >= maxFaultsInARow || g.rng.Float64() >= p {
		g.inARow[key] = 0
		return false
	}
	g.inARow[key]++
	return true
}

func (g *faultyGateway) intn(n int) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.rng.IntN(n)
}

func (g *faultyGateway) count(f func(*faultCounts)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f(&g.counts)
}

func (g *faultyGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Method + " " + r.URL.Path
	isStream := strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	isStart := r.Method == http.MethodPost && r.URL.Path == "/v1/executions"
	isRespond := r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, ":respond")

	if g.maybe(key+" throttle", 0.15) { // (c)
		g.throttle(w)
		return
	}
	switch {
	case isStart && isStream:
		g.streamStart(w, r, key)
	case isStream:
		g.stream(w, r, key)
	case isStart || isRespond:
		g.forwardThenMaybeDrop(w, r, key, isStart)
	default:
		g.upstream.ServeHTTP(w, r)
	}
}

// throttle answers 503 or 429 with a Retry-After of 0–3 s (the client caps it), with a Problem
// body or, as a gateway might, plain text.
func (g *faultyGateway) throttle(w http.ResponseWriter) {
	g.count(func(c *faultCounts) { c.throttled++ })
	status := []int{http.StatusServiceUnavailable, http.StatusTooManyRequests}[g.intn(2)]
	w.Header().Set("Retry-After", strconv.Itoa(g.intn(4)))
	if g.intn(2) == 0 {
		http.Error(w, "slow down", status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"code":"INTERNAL_ERROR","message":"gateway busy"}`))
}

// stream forwards an SSE request, (b) sometimes with its cursor moved back, and (a) sometimes
// cuts the response after a random number of bytes (possibly inside an event).
func (g *faultyGateway) stream(w http.ResponseWriter, r *http.Request, key string) {
	cursor := r.Header.Get("Last-Event-ID")
	if cursor == "" {
		cursor = r.URL.Query().Get("after")
	}
	if strings.Contains(cursor, "-") && g.maybe(key+" rewind", 0.5) {
		// A conversation's or tenant's cursor is opaque: rewound to the beginning, which sends
		// every event again.
		r = r.Clone(r.Context())
		if r.Header.Get("Last-Event-ID") != "" {
			r.Header.Set("Last-Event-ID", "0")
		}
		q := r.URL.Query()
		q.Set("after", "0")
		r.URL.RawQuery = q.Encode()
		g.count(func(c *faultCounts) { c.rewoundCursors++ })
	} else if n, _ := strconv.ParseInt(cursor, 10, 64); n > 0 && g.maybe(key+" rewind", 0.5) {
		earlier := strconv.Itoa(g.intn(int(n)))
		r = r.Clone(r.Context())
		if r.Header.Get("Last-Event-ID") != "" {
			r.Header.Set("Last-Event-ID", earlier)
		}
		q := r.URL.Query()
		q.Set("after", earlier)
		r.URL.RawQuery = q.Encode()
		g.count(func(c *faultCounts) { c.rewoundCursors++ })
	}
	if g.maybe(key+" cut", 0.6) {
		w = &cuttingWriter{ResponseWriter: w, budget: g.intn(1500), onCut: func() {
			g.count(func(c *faultCounts) { c.streamCuts++ })
		}}
	}
	g.upstream.ServeHTTP(w, r)
}

// streamStart forwards a start that asks for the stream (Run's) like any stream, records the
// execution the server names in its header, and (d) sometimes drops the answer there: the
// server applied the start, the client never learns which execution it made.
func (g *faultyGateway) streamStart(w http.ResponseWriter, r *http.Request, key string) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req api.StartExecutionRequest
	_ = json.Unmarshal(body, &req)
	g.stream(&startAnswer{ResponseWriter: w, g: g, conversation: req.ConversationID, drop: g.maybe(key+" drop", 0.4)}, r, key)
}

// startAnswer records the execution of a streamed start's answer, or drops the answer.
type startAnswer struct {
	http.ResponseWriter
	g            *faultyGateway
	conversation string
	drop         bool
	dropped      bool
}

func (a *startAnswer) WriteHeader(code int) {
	if a.dropped {
		return
	}
	if code == http.StatusOK {
		a.g.recordStart(a.conversation, a.Header().Get("Harness-Execution-Id"))
	}
	if a.drop && code/100 == 2 {
		a.g.count(func(c *faultCounts) { c.droppedStarts++ })
		a.dropped = true
		if conn, _, err := http.NewResponseController(a.ResponseWriter).Hijack(); err == nil {
			_ = conn.Close()
		}
		return
	}
	a.ResponseWriter.WriteHeader(code)
}

func (a *startAnswer) Write(p []byte) (int, error) {
	if a.dropped {
		return 0, errCut
	}
	return a.ResponseWriter.Write(p)
}

// Flush does nothing once the answer was dropped: net/http's Flush on a hijacked connection panics.
func (a *startAnswer) Flush() {
	if !a.dropped {
		_ = http.NewResponseController(a.ResponseWriter).Flush()
	}
}

func (g *faultyGateway) recordStart(conversationID, executionID string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.startsBy[conversationID] == nil {
		g.startsBy[conversationID] = map[string]bool{}
	}
	g.startsBy[conversationID][executionID] = true
}

// forwardThenMaybeDrop forwards a start or an action answer and records which execution the
// server answered a start with; (d) sometimes the answer never reaches the client.
func (g *faultyGateway) forwardThenMaybeDrop(w http.ResponseWriter, r *http.Request, key string, isStart bool) {
	rec := httptest.NewRecorder()
	g.upstream.ServeHTTP(rec, r)
	if isStart && rec.Code == http.StatusAccepted {
		var exec api.Execution
		if err := json.Unmarshal(rec.Body.Bytes(), &exec); err == nil {
			g.recordStart(exec.ConversationID, exec.ID)
		}
	}
	if rec.Code/100 == 2 && g.maybe(key+" drop", 0.4) {
		g.count(func(c *faultCounts) {
			if isStart {
				c.droppedStarts++
			} else {
				c.droppedResponds++
			}
		})
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = conn.Close()
		}
		return
	}
	for name, values := range rec.Header() {
		w.Header()[name] = values
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

func (g *faultyGateway) executionsStartedIn(conversationID string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.startsBy[conversationID])
}

// cuttingWriter passes budget bytes through, then fails the write, which makes the
// ReverseProxy abort the client's connection mid-stream.
type cuttingWriter struct {
	http.ResponseWriter
	budget int
	onCut  func()
}

var errCut = errors.New("fault injection: stream cut")

func (w *cuttingWriter) Write(p []byte) (int, error) {
	if len(p) <= w.budget {
		w.budget -= len(p)
		return w.ResponseWriter.Write(p)
	}
	n, _ := w.ResponseWriter.Write(p[:w.budget])
	w.budget = 0
	_ = http.NewResponseController(w.ResponseWriter).Flush()
	w.onCut()
	return n, errCut
}

func (w *cuttingWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w *cuttingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestExactlyOnceUnderInjectedFaults runs many seeded executions through the faulty gateway
// and checks that the caller sees every event exactly once and in order, that each logical
// start created exactly one execution, and that retried answers were not errors.
func TestExactlyOnceUnderInjectedFaults(t *testing.T) {
	const runs = 40
	srv := newTestServer(t)
	direct := newClient(t, srv.URL)
	var total faultCounts
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu")

	for seed := uint64(1); seed <= runs; seed++ {
		gw := newFaultyGateway(srv.URL, seed)
		gateway := httptest.NewServer(gw)
		c := newClient(t, gateway.URL)

		rng := rand.New(rand.NewPCG(seed, 7))
		input := make([]string, 3+rng.IntN(20))
		for i := range input {
			input[i] = words[rng.IntN(len(words))]
		}
		config := api.JSONObject{"delayMs": rng.IntN(3), "requireApproval": rng.IntN(2) == 0, "requestInput": rng.IntN(2) == 0}
		want := "Echo: " + strings.Join(input, " ")
		if config["requestInput"] == true {
			want += " v" + strconv.FormatUint(seed, 10)
		}
		createdBefore := srv.created.n.Load()

		ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a bound against hangs, not a speed check
		conv, err := c.CreateConversation(ctx, api.CreateConversationRequest{})
		if err != nil {
			cancel()
			t.Fatalf("seed %d: CreateConversation: %v", seed, err)
		}
		var seen []api.RuntimeEvent
		res, err := c.Run(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock",
			Input: strings.Join(input, " "), Config: config}, sdk.RunHandlers{
			OnEvent: func(e api.RuntimeEvent) { seen = append(seen, e) },
			OnAction: func(_ context.Context, a api.ActionRequest) (api.ActionResponse, error) {
				if a.Kind == api.ActionKindApproval {
					return api.ActionResponse{Approved: new(true)}, nil
				}
				return api.ActionResponse{Value: new(api.JSONValue("v" + strconv.FormatUint(seed, 10)))}, nil
			},
		})
		if err != nil {
			cancel()
			t.Fatalf("seed %d: Run: %v", seed, err)
		}
		waited, err := c.WaitForTerminal(ctx, res.Execution.ID)
		cancel()
		if err != nil || !reflect.DeepEqual(waited, res.Execution) {
			t.Fatalf("seed %d: WaitForTerminal = %+v, %v; want %+v", seed, waited, err, res.Execution)
		}

		if !res.Succeeded() || res.Output != want {
			t.Fatalf("seed %d: Run ended %s with output %q, want succeeded with %q", seed, res.Execution.State, res.Output, want)
		}
		for i, e := range seen {
			if e.Sequence != int64(i+1) || e.ExecutionID != res.Execution.ID {
				t.Fatalf("seed %d: event %d is %s (sequence %d): not exactly once and in order", seed, i, e.ID, e.Sequence)
			}
		}
		truth, err := direct.ListEvents(t.Context(), res.Execution.ID, 0, 0)
		if err != nil || !reflect.DeepEqual(seen, truth.Events) {
			t.Fatalf("seed %d: the caller saw %d events, the server stored %d (%v)", seed, len(seen), len(truth.Events), err)
		}
		if n := gw.executionsStartedIn(conv.ID); n != 1 {
			t.Fatalf("seed %d: the server answered starts with %d executions, want 1", seed, n)
		}
		if n := srv.created.n.Load() - createdBefore; n != 1 {
			t.Fatalf("seed %d: the runtime created %d executions, want 1", seed, n)
		}
		gateway.Close()
		total.add(gw.counts)
	}
	t.Logf("fault injection: %d runs, %d faults: %d stream cuts, %d rewound cursors (re-sent events), %d 503/429 answers, %d dropped start answers, %d dropped respond answers",
		runs, total.total(), total.streamCuts, total.rewoundCursors, total.throttled, total.droppedStarts, total.droppedResponds)
	if total.streamCuts == 0 || total.rewoundCursors == 0 || total.throttled == 0 || total.droppedStarts == 0 || total.droppedResponds == 0 {
		t.Fatalf("some fault was never injected: %+v", total)
	}
}
