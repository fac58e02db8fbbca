package sdk_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/proxy"
	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// forgetfulServer stands for the reference server, which resumes an event stream from the
// query parameter after and ignores Last-Event-ID: it strips that header before the real
// handler sees it. It records every event frame it sends (by sequence) and the after of every
// stream, and cuts stream number i cleanly after cuts[i] events, as a proxy's limit or a
// server reload would.
type forgetfulServer struct {
	next http.Handler
	cuts []int

	mu      sync.Mutex
	sent    map[int64]int // how many times each sequence went out on a stream
	afters  []string      // the after query parameter of each stream, in order
	cutAt   time.Time     // when the last cut happened
	resumes []time.Duration
}

func (f *forgetfulServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		// Nor does the reference stream a start: it answers 202 whatever Accept says.
		r.Header.Del("Accept")
	}
	if r.Header.Get("Accept") != "text/event-stream" {
		f.next.ServeHTTP(w, r)
		return
	}
	f.mu.Lock()
	stream := len(f.afters)
	f.afters = append(f.afters, r.URL.Query().Get("after"))
	if !f.cutAt.IsZero() {
		f.resumes = append(f.resumes, time.Since(f.cutAt))
		f.cutAt = time.Time{}
	}
	cut := -1
	if stream < len(f.cuts) {
		cut = f.cuts[stream]
	}
	f.mu.Unlock()

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	r = r.Clone(ctx)
	r.Header.Del("Last-Event-ID")
	f.next.ServeHTTP(&frameCounter{ResponseWriter: w, server: f, left: cut, cut: cancel}, r)
}

// frameCounter passes whole SSE frames through, counts the events among them, and after left
// events (never, if left < 0) ends the response: it drops what follows and ends the handler.
type frameCounter struct {
	http.ResponseWriter
	server  *forgetfulServer
	left    int
	cut     context.CancelFunc
	pending []byte // the start of a frame not yet complete
	done    bool
}

func (c *frameCounter) Write(p []byte) (int, error) {
	if c.done {
		return 0, http.ErrHandlerTimeout
	}
	c.pending = append(c.pending, p...)
	for !c.done {
		end := bytes.Index(c.pending, []byte("\n\n"))
		if end < 0 {
			break
		}
		frame := c.pending[:end+2]
		c.pending = c.pending[end+2:]
		if _, err := c.ResponseWriter.Write(frame); err != nil {
			return 0, err
		}
		if seq, ok := frameSequence(frame); ok {
			c.server.mu.Lock()
			c.server.sent[seq]++
			c.server.mu.Unlock()
			c.left--
			if c.left == 0 {
				c.done = true
				c.Flush()
				c.server.mu.Lock()
				c.server.cutAt = time.Now()
				c.server.mu.Unlock()
				c.cut()
			}
		}
	}
	return len(p), nil
}

func (c *frameCounter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (c *frameCounter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// frameSequence is the id: of an SSE frame, the event's sequence.
func frameSequence(frame []byte) (int64, bool) {
	for line := range bytes.SplitSeq(frame, []byte("\n")) {
		if id, ok := bytes.CutPrefix(line, []byte("id: ")); ok {
			n, err := strconv.ParseInt(string(id), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// Against a server that ignores Last-Event-ID, a reconnect asks for what comes after the
// cursor in after as well, so nothing is downloaded twice. The server and the client run with
// their default retry hint and retry policy; the time from each cut to the reconnect is logged.
func TestReconnectResumesFromTheCursorWhenLastEventIDIsIgnored(t *testing.T) {
	rt, err := local.Open(t.TempDir(), backend.Options{Providers: []backend.Provider{mock.New()}})
	if err != nil {
		t.Fatal(err)
	}
	h := proxy.New(rt, proxy.Options{})
	forgetful := &forgetfulServer{next: h, cuts: []int{2, 2}, sent: map[int64]int{}}
	hs := httptest.NewServer(forgetful)
	t.Cleanup(func() { h.Shutdown(); hs.Close(); _ = rt.Close() })

	client, err := sdk.New(hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	conv, err := client.CreateConversation(t.Context(), api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var seen []api.RuntimeEvent
	handlers := approve
	handlers.OnEvent = func(e api.RuntimeEvent) { seen = append(seen, e) }
	res, err := client.Run(bounded(t), api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock",
		Input: "alpha beta gamma delta", Config: api.JSONObject{"requireApproval": true}}, handlers)
	if err != nil || !res.Succeeded() {
		t.Fatalf("Run = %+v, %v", res.Execution, err)
	}
	truth, err := client.ListEvents(t.Context(), res.Execution.ID, 0, 0)
	if err != nil || len(seen) != len(truth.Events) || len(truth.Events) <= 4 {
		t.Fatalf("the caller saw %d events %v, the server stored %d (%v)", len(seen), types(seen), len(truth.Events), err)
	}

	forgetful.mu.Lock()
	defer forgetful.mu.Unlock()
	if len(forgetful.afters) < 3 || forgetful.afters[1] != "2" || forgetful.afters[2] != "4" {
		t.Errorf("streams asked after %q; want 0, 2, 4 (the cursor at each cut)", forgetful.afters)
	}
	for _, e := range truth.Events {
		if n := forgetful.sent[e.Sequence]; n != 1 {
			t.Errorf("event %d (%s) was sent %d times", e.Sequence, e.Type, n)
		}
	}
	t.Logf("from cut to reconnect: %v", forgetful.resumes)
}

// waitRecorder is a slog.Handler that keeps the wait the client logs before each reconnect.
type waitRecorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (w *waitRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (w *waitRecorder) WithAttrs([]slog.Attr) slog.Handler       { return w }
func (w *waitRecorder) WithGroup(string) slog.Handler            { return w }

func (w *waitRecorder) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "harness: reconnecting event stream" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "wait" {
			w.mu.Lock()
			w.waits = append(w.waits, a.Value.Duration())
			w.mu.Unlock()
		}
		return true
	})
	return nil
}

func (w *waitRecorder) recorded() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.waits...)
}

// A stream that waits for an approval brings no event, only heartbeats; when something cuts
// it after a while (a proxy's limit on a stream's life), every reconnect is the quick first
// one, not a backoff that grows with each cut as if the server were failing.
func TestLongQuietStreamsCutAgainReconnectQuickly(t *testing.T) {
	const heartbeat = 20 * time.Millisecond
	srv := newTestServerWithHeartbeat(t, heartbeat)
	cutter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") == "text/event-stream" {
			ctx, cancel := context.WithTimeout(r.Context(), 5*heartbeat) // then the stream ends cleanly
			defer cancel()
			r = r.WithContext(ctx)
		}
		srv.handler.ServeHTTP(w, r)
	}))
	t.Cleanup(cutter.Close)

	policy := sdk.RetryPolicy{MaxAttempts: 2, MinWait: 20 * time.Millisecond, MaxWait: time.Second}
	recorder := &waitRecorder{}
	c := newClient(t, cutter.URL, sdk.WithRetry(policy), sdk.WithHeartbeatInterval(heartbeat), sdk.WithLogger(slog.New(recorder)))
	conv, err := c.CreateConversation(t.Context(), api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	exec := start(t, c, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "x",
		Config: api.JSONObject{"requireApproval": true}})

	const reconnects = 5
	ctx, stop := context.WithCancel(bounded(t))
	defer stop()
	go func() { // stop following once enough cuts have been seen
		for len(recorder.recorded()) < reconnects && sleepCtx(ctx, heartbeat) {
		}
		stop()
	}()
	for _, err := range c.Events(ctx, exec.ID, 0) {
		if err != nil && ctx.Err() == nil {
			t.Fatal(err)
		}
	}
	waits := recorder.recorded()
	if len(waits) < reconnects {
		t.Fatalf("%d reconnects before the bound: %v", len(waits), waits)
	}
	for i, wait := range waits {
		if wait > policy.MinWait {
			t.Fatalf("reconnect %d waited %v (all: %v); after a stream that lived a heartbeat interval the wait is at most min(100ms, MinWait) = %v",
				i+1, wait, waits, policy.MinWait)
		}
	}
}
