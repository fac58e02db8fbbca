package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// TestFinishedStreamsAreNotReconnected: after an execution's terminal event the server ends its
// stream, and a client's reconnect (Last-Event-ID at the end) is answered 204 No Content, the one
// answer after which EventSource clients stop. Checked with the clients people use, against the
// real binary: our Go SDK, npm's eventsource and Chromium's EventSource (on the API's origin and
// from another origin through CORS, see TestCrossOriginPageUsesTheAPI). A request with only
// ?after= (the reference's TypeScript SDK, streamEvents(id, {after})) keeps its 200.
func TestFinishedStreamsAreNotReconnected(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary, node and a browser; run without -short")
	}
	bin := buildCaddy(t)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><title>another origin</title><p>a page served elsewhere</p>")
	}))
	t.Cleanup(page.Close)
	srv := startCaddyWith(t, bin, append(instanceEnv(t), "HARNESS_ALLOWED_ORIGIN="+page.URL), crossOriginCaddyfile)
	c := &client{t: t, base: srv.url}
	id := finishedExecution(c)
	events := srv.url + "/v1/executions/" + id + "/events"

	t.Run("after alone keeps 200", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, events+"?after=7", nil)
		req.Header.Set("Accept", "text/event-stream")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("?after=7 without Last-Event-ID: %d %s, want 200 text/event-stream", res.StatusCode, res.Header.Get("Content-Type"))
		}
	})

	t.Run("Go SDK", func(t *testing.T) {
		rec := &statusRecorder{next: http.DefaultTransport}
		cl, err := sdk.New(srv.url, sdk.WithHTTPClient(&http.Client{Transport: rec}))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		var got []int64
		for e, err := range cl.Events(ctx, id, 7) {
			if err != nil {
				t.Fatalf("Events from the end: %v", err)
			}
			got = append(got, e.Sequence)
		}
		if len(got) != 0 {
			t.Fatalf("Events from the end yielded %v", got)
		}
		if !slices.Contains(rec.statuses(), http.StatusNoContent) {
			t.Fatalf("the SDK's requests were answered %v; want its stream request answered 204", rec.statuses())
		}
		// And from the start: every event once, then the end, though the SDK resumes with
		// Last-Event-ID should the stream drop.
		got = nil
		for e, err := range cl.Events(ctx, id, 0) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, e.Sequence)
		}
		if fmt.Sprint(got) != "[1 2 3 4 5 6 7]" {
			t.Fatalf("Events from the start: %v", got)
		}
	})

	t.Run("npm eventsource", func(t *testing.T) {
		node := npmInstall(t, eventsourceClientDir)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, node, filepath.Join(eventsourceClientDir, "client.mjs"), events).Output()
		var report struct {
			Closed    bool    `json:"closed"`
			Sequences []int64 `json:"sequences"`
			Statuses  []int   `json:"statuses"`
		}
		if jerr := json.Unmarshal(out, &report); jerr != nil {
			t.Fatalf("node client.mjs: %v, output %q", err, out)
		}
		// The first request streams every event, the reconnect after the end gets 204, and the
		// client is CLOSED: no third request.
		if !report.Closed || fmt.Sprint(report.Sequences) != "[1 2 3 4 5 6 7]" || fmt.Sprint(report.Statuses) != "[200 204]" {
			t.Fatalf("npm eventsource: %s; want closed after events 1–7, requests answered [200 204]", out)
		}
	})

	t.Run("Chromium EventSource", func(t *testing.T) {
		p := openBrowser(t)
		// A page of the API's own origin (the console), so no CORS is involved here.
		p.navigate(srv.url + "/console/")
		got := followInBrowser(p, events, false)
		if fmt.Sprint(got.Sequences) != "[1 2 3 4 5 6 7]" || got.Opens != 1 {
			t.Fatalf("EventSource on the API's origin: %+v; want events 1–7 over one connection, then closed", got)
		}
	})
}

// browserFollow is what followInBrowser saw.
type browserFollow struct {
	Sequences []int64 `json:"sequences"`
	Opens     int     `json:"opens"`
}

// followInBrowser opens an EventSource on url in the page, waits until it is CLOSED (the only
// way it stops reconnecting by itself: an answer such as 204), and returns what it received.
func followInBrowser(p *browserPage, url string, withCredentials bool) browserFollow {
	p.t.Helper()
	p.evaluateVoid(fmt.Sprintf(`(() => {
		const seen = window.followed = {sequences: [], opens: 0, closed: false};
		const source = new EventSource(%q, {withCredentials: %t});
		source.onopen = () => { seen.opens++; };
		for (const type of ['run.queued', 'run.started', 'output.text.delta', 'output.text.done', 'run.completed']) {
			source.addEventListener(type, (e) => seen.sequences.push(Number(e.lastEventId)));
		}
		source.onerror = () => { if (source.readyState === EventSource.CLOSED) seen.closed = true; };
	})()`, url, withCredentials))
	p.waitJS(`window.followed.closed`)
	return evaluate[browserFollow](p, `window.followed`)
}

// TestCrossOriginPageUsesTheAPI: a page served from another origin (another loopback port)
// that allowed_origins lists uses the API in Chromium: a POST with a JSON body (preflighted),
// reading Idempotent-Replayed on a replayed start, a fetch that sends Last-Event-ID (preflighted
// too) and gets the 204 of a finished stream, and an EventSource with credentials that streams
// every event and then stops. A page of an origin not on the list is refused.
func TestCrossOriginPageUsesTheAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary and a browser; run without -short")
	}
	bin := buildCaddy(t)
	pageHandler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><title>another origin</title><p>a page served elsewhere</p>")
	})
	allowed := httptest.NewServer(pageHandler)
	t.Cleanup(allowed.Close)
	other := httptest.NewServer(pageHandler)
	t.Cleanup(other.Close)
	srv := startCaddyWith(t, bin, append(instanceEnv(t), "HARNESS_ALLOWED_ORIGIN="+allowed.URL), crossOriginCaddyfile)
	p := openBrowser(t)
	p.navigate(allowed.URL + "/")

	type answers struct {
		Conversation int    `json:"conversation"`
		Started      int    `json:"started"`
		Replayed     string `json:"replayed"`
		ExecutionID  string `json:"executionId"`
		State        string `json:"state"`
		Reconnect    int    `json:"reconnect"`
		Last         int64  `json:"last"`
		Error        string `json:"error"`
	}
	script := fmt.Sprintf(`(async () => {
		const api = %q, out = {};
		try {
			const json = {'Content-Type': 'application/json'};
			let res = await fetch(api + '/v1/conversations', {method: 'POST', headers: json, body: '{}', credentials: 'include'});
			out.conversation = res.status;
			const conv = await res.json();
			const start = JSON.stringify({conversationId: conv.id, providerId: 'mock', input: 'from another origin', idempotencyKey: 'page-1'});
			res = await fetch(api + '/v1/executions', {method: 'POST', headers: json, body: start, credentials: 'include'});
			out.started = res.status;
			const exec = await res.json();
			out.executionId = exec.id;
			res = await fetch(api + '/v1/executions', {method: 'POST', headers: json, body: start, credentials: 'include'});
			out.replayed = res.headers.get('Idempotent-Replayed');
			for (let i = 0; i < 600; i++) {
				const snapshot = await (await fetch(api + '/v1/executions/' + exec.id, {credentials: 'include'})).json();
				out.state = snapshot.state;
				if (snapshot.state === 'succeeded') break;
				await new Promise((r) => setTimeout(r, 50));
			}
			out.last = (await (await fetch(api + '/v1/executions/' + exec.id + '/events', {credentials: 'include'})).json()).nextCursor;
			res = await fetch(api + '/v1/executions/' + exec.id + '/events', {headers: {'Accept': 'text/event-stream', 'Last-Event-ID': String(out.last)}, credentials: 'include'});
			out.reconnect = res.status;
		} catch (e) {
			out.error = String(e);
		}
		return out;
	})()`, srv.url)
	got := evaluateAwait[answers](p, script)
	if got.Error != "" || got.Conversation != http.StatusCreated || got.Started != http.StatusAccepted ||
		got.Replayed != "true" || got.State != "succeeded" || got.Reconnect != http.StatusNoContent {
		t.Fatalf("the page on %s using %s: %+v", allowed.URL, srv.url, got)
	}
	followed := followInBrowser(p, srv.url+"/v1/executions/"+got.ExecutionID+"/events", true)
	if !fromOneTo(followed.Sequences, got.Last) || followed.Opens != 1 {
		t.Fatalf("EventSource with credentials from another origin: %+v; want events 1–%d over one connection, then closed", followed, got.Last)
	}

	// An origin that is not allowed can neither read nor POST: fetch fails as a network error.
	p.navigate(other.URL + "/")
	refused := evaluateAwait[string](p, fmt.Sprintf(`fetch(%q + '/v1/runtime').then(r => 'read ' + r.status, e => 'refused: ' + e.name)`, srv.url))
	if !strings.HasPrefix(refused, "refused: TypeError") {
		t.Fatalf("a page of an origin not allowed: %s", refused)
	}
}

// evaluateAwait is evaluate for an expression whose value is a promise: its result.
func evaluateAwait[T any](p *browserPage, expr string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		p.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// fromOneTo reports whether seqs is 1, 2, …, last.
func fromOneTo(seqs []int64, last int64) bool {
	if int64(len(seqs)) != last || last == 0 {
		return false
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			return false
		}
	}
	return true
}

const crossOriginCaddyfile = "testdata/cross-origin.Caddyfile"

// eventsourceClientDir holds the npm eventsource client and its lock file.
const eventsourceClientDir = "testdata/eventsource-client"

// finishedExecution starts a mock execution and waits until it has succeeded (7 events).
func finishedExecution(c *client) string {
	c.t.Helper()
	conv := c.post("/v1/conversations", map[string]any{}, http.StatusCreated)
	exec := c.post("/v1/executions", map[string]any{"conversationId": conv["id"], "providerId": "mock", "input": "hello runtime"}, http.StatusAccepted)
	id := exec["id"].(string)
	c.waitFor(id, api.ExecutionStateSucceeded)
	return id
}

// npmInstall installs dir's dependencies from its lock file (npm ci) when they are missing, and
// returns node's path. Without node or npm the test fails under CI=true (.ci/run installs
// them) and is skipped elsewhere, saying what to install.
func npmInstall(t *testing.T, dir string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	npm, npmErr := exec.LookPath("npm")
	if err != nil || npmErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node and npm are needed for this test (apt-get install nodejs npm): %v %v", err, npmErr)
		}
		t.Skipf("node and npm are needed for this test; install them with `apt-get install nodejs npm` (under CI=true this fails): %v %v", err, npmErr)
	}
	npmInstallOnce.Do(func() {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "eventsource")); err == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		install := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		install.Dir = dir
		if out, err := install.CombinedOutput(); err != nil {
			npmInstallErr = fmt.Errorf("npm ci in %s: %v\n%s", dir, err, out)
		}
	})
	if npmInstallErr != nil {
		t.Fatal(npmInstallErr)
	}
	return node
}

var (
	npmInstallOnce sync.Once
	npmInstallErr  error
)

// statusRecorder records the status of every answer.
type statusRecorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen []int
}

func (s *statusRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := s.next.RoundTrip(r)
	if err == nil {
		s.mu.Lock()
		s.seen = append(s.seen, res.StatusCode)
		s.mu.Unlock()
	}
	return res, err
}

func (s *statusRecorder) statuses() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}
