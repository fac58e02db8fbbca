package caddymodule

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddytest"
	"github.com/caddyserver/certmagic"
	sse "github.com/tmaxmax/go-sse"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// The in-process Caddy of caddytest is one per test binary, on fixed ports (admin 2999, HTTP
// 9080, HTTPS 9443): every test here loads its own config into it, so none may run in parallel.
const (
	adminURL = "http://localhost:2999"
	httpURL  = "http://localhost:9080"
	httpsURL = "https://localhost:9443"
)

// caddyHome isolates Caddy's own state (internal CA, certificates, locks) from the machine's.
var caddyHome string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "harness-caddytest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	caddyHome = dir
	os.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	// Caddy computed these two from the real home when its package was initialised; caddytest's
	// Caddy (started on the first load) autosaves its config and keeps its CA in them.
	caddy.ConfigAutosavePath = filepath.Join(dir, "config", "caddy", "autosave.json")
	caddy.DefaultStorage = &certmagic.FileStorage{Path: filepath.Join(dir, "data", "caddy")}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// globalOptions is the global block of every test config: caddytest's fixed ports, no system
// trust store, no autosave, and a short grace period so old servers never hold a reload.
func globalOptions() string {
	return `{
	skip_install_trust
	admin localhost:2999
	http_port 9080
	https_port 9443
	grace_period 1ns
	persist_config off
}
`
}

// loadCaddyfile (re)loads the in-process Caddy with globalOptions plus sites. When the test ends
// it loads an empty config, so the test's runtime is closed before its data directory goes.
func loadCaddyfile(t *testing.T, sites string) *caddytest.Tester {
	t.Helper()
	tester := caddytest.NewTester(t)
	tester.InitServer(globalOptions()+sites, "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	t.Cleanup(func() { unloadConfig(t) })
	return tester
}

// reloadCaddyfile replaces the running config, as `caddy reload` does.
func reloadCaddyfile(t *testing.T, sites string) {
	t.Helper()
	tester := caddytest.NewTester(t)
	tester.InitServer(globalOptions()+sites, "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
}

func unloadConfig(t *testing.T) {
	resp, err := http.Post(adminURL+"/load", "application/json",
		strings.NewReader(`{"admin":{"listen":"localhost:2999","config":{"persist":false}}}`))
	if err != nil {
		t.Errorf("unloading the config: %v", err)
		return
	}
	resp.Body.Close()
}

// postLoad posts a Caddyfile to the admin API and returns the status and body, for loads that
// are meant to fail.
func postLoad(t *testing.T, sites string) (int, string) {
	t.Helper()
	resp, err := http.Post(adminURL+"/load", "text/caddyfile", strings.NewReader(globalOptions()+sites))
	if err != nil {
		t.Fatalf("POST /load: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// client talks to one base URL with plain net/http.
type client struct {
	t    *testing.T
	base string
	http *http.Client
}

func newClient(t *testing.T, base string, hc *http.Client) *client {
	if hc == nil {
		hc = &http.Client{Transport: caddytest.CreateTestingTransport()}
	}
	return &client{t: t, base: base, http: hc}
}

// do sends a request and decodes a JSON answer into out (when non-nil), failing the test unless
// the status is want.
func (c *client) do(method, path string, body any, want int, out any) *http.Response {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(c.t.Context(), method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	if resp.StatusCode != want {
		c.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, resp.StatusCode, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			c.t.Fatalf("%s %s: decoding %s: %v", method, path, raw, err)
		}
	}
	return resp
}

func (c *client) createConversation() api.Conversation {
	c.t.Helper()
	var conv api.Conversation
	c.do(http.MethodPost, "/v1/conversations", map[string]any{}, http.StatusCreated, &conv)
	return conv
}

func (c *client) startExecution(req api.StartExecutionRequest) api.Execution {
	c.t.Helper()
	var exec api.Execution
	c.do(http.MethodPost, "/v1/executions", req, http.StatusAccepted, &exec)
	return exec
}

func (c *client) execution(id string) api.Execution {
	c.t.Helper()
	var exec api.Execution
	c.do(http.MethodGet, "/v1/executions/"+id, nil, http.StatusOK, &exec)
	return exec
}

func (c *client) events(id string, after int64) []api.RuntimeEvent {
	c.t.Helper()
	var list api.EventList
	c.do(http.MethodGet, "/v1/executions/"+id+"/events?after="+strconv.FormatInt(after, 10), nil, http.StatusOK, &list)
	return list.Events
}

// stream is an open SSE response on an execution's events.
type stream struct {
	resp   *http.Response
	cancel context.CancelFunc
	next   func() (sse.Event, error, bool)
	stop   func()
}

// openStream opens the event stream after the cursor lastEventID (sent as Last-Event-ID, as a
// reconnecting EventSource does; "" sends none).
func (c *client) openStream(id, lastEventID string) *stream {
	c.t.Helper()
	// The deadline only keeps a broken stream from hanging the test run.
	ctx, cancel := context.WithTimeout(c.t.Context(), 2*time.Minute)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/v1/executions/"+id+"/events", nil)
	if err != nil {
		cancel()
		c.t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		cancel()
		c.t.Fatalf("opening the event stream: %v", err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		c.t.Fatalf("event stream: status %d, content type %q, body %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	s := &stream{resp: resp, cancel: cancel}
	s.next, s.stop = iter.Pull2(sse.Read(resp.Body, nil))
	c.t.Cleanup(s.close)
	return s
}

// read returns the next event of the stream; ok is false at the end of the stream.
func (s *stream) read(t *testing.T) (ev api.RuntimeEvent, ok bool) {
	t.Helper()
	msg, err, ok := s.next()
	if !ok {
		return api.RuntimeEvent{}, false
	}
	if err != nil {
		t.Fatalf("reading the event stream: %v", err)
	}
	if err := json.Unmarshal([]byte(msg.Data), &ev); err != nil {
		t.Fatalf("decoding event %q: %v", msg.Data, err)
	}
	if msg.LastEventID != strconv.FormatInt(ev.Sequence, 10) || msg.Type != string(ev.Type) {
		t.Fatalf("SSE fields id=%q event=%q do not match the event %s #%d", msg.LastEventID, msg.Type, ev.Type, ev.Sequence)
	}
	return ev, true
}

// readUntil reads events until one of type typ (returned last), failing at the end of stream.
func (s *stream) readUntil(t *testing.T, typ api.StandardEventType) []api.RuntimeEvent {
	t.Helper()
	var got []api.RuntimeEvent
	for {
		ev, ok := s.read(t)
		if !ok {
			t.Fatalf("the stream ended before a %s event; got %v", typ, types(got))
		}
		got = append(got, ev)
		if ev.Type == typ {
			return got
		}
	}
}

// readAll reads events until the server ends the stream.
func (s *stream) readAll(t *testing.T) []api.RuntimeEvent {
	t.Helper()
	var got []api.RuntimeEvent
	for {
		ev, ok := s.read(t)
		if !ok {
			return got
		}
		got = append(got, ev)
	}
}

func (s *stream) close() {
	s.stop()
	s.cancel()
	s.resp.Body.Close()
}

func types(events []api.RuntimeEvent) []api.StandardEventType {
	out := make([]api.StandardEventType, len(events))
	for i, ev := range events {
		out[i] = ev.Type
	}
	return out
}

func isTerminal(t api.StandardEventType) bool {
	return t == api.StandardEventTypeRunCompleted || t == api.StandardEventTypeRunFailed || t == api.StandardEventTypeRunCancelled
}

// assertContiguous checks that events are exactly the sequences from, from+1, … and end with the
// execution's one terminal event.
func assertContiguous(t *testing.T, events []api.RuntimeEvent, from int64) {
	t.Helper()
	for i, ev := range events {
		if want := from + int64(i); ev.Sequence != want {
			t.Fatalf("event %d has sequence %d, want %d (types %v)", i, ev.Sequence, want, types(events))
		}
		if last := i == len(events)-1; isTerminal(ev.Type) != last {
			t.Fatalf("terminal event at %d of %d: %v", i, len(events), types(events))
		}
	}
}
