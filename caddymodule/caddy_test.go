package caddymodule

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// site returns a site block serving the protocol with the mock provider from dir, plus a route
// of its own to show that other paths still reach the rest of the site.
func site(address, dir, extra string) string {
	return fmt.Sprintf(`
%s {
	%s
	harness {
		data_dir %s
		provider mock
	}
	respond /not-the-protocol "next handler" 200
}
`, address, extra, dir)
}

func TestExecutionOverHTTP(t *testing.T) {
	loadCaddyfile(t, site("http://localhost:9080", t.TempDir(), ""))
	c := newClient(t, httpURL, nil)
	metricsBefore := scrapeMetrics(t)

	var health map[string]string
	c.do(http.MethodGet, "/healthz", nil, http.StatusOK, &health)
	if health["status"] != "ok" {
		t.Fatalf("healthz: %v", health)
	}
	var runtime api.RuntimeDescription
	c.do(http.MethodGet, "/v1/runtime", nil, http.StatusOK, &runtime)
	if len(runtime.Providers) != 1 || runtime.Providers[0].ID != "mock" {
		t.Fatalf("providers: %+v", runtime.Providers)
	}

	conv := c.createConversation()
	exec := c.startExecution(api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "hello runtime"})
	if exec.State != api.ExecutionStateQueued {
		t.Fatalf("new execution state %s, want queued", exec.State)
	}

	events := c.openStream(exec.ID, "").readAll(t)
	assertContiguous(t, events, 1)
	want := []api.StandardEventType{
		api.StandardEventTypeRunQueued, api.StandardEventTypeRunStarted,
		api.StandardEventTypeOutputTextDelta, api.StandardEventTypeOutputTextDelta, api.StandardEventTypeOutputTextDelta,
		api.StandardEventTypeOutputTextDone, api.StandardEventTypeRunCompleted,
	}
	if !slices.Equal(types(events), want) {
		t.Fatalf("events %v, want %v", types(events), want)
	}
	final := c.execution(exec.ID)
	if final.State != api.ExecutionStateSucceeded || final.FinalOutput == nil || *final.FinalOutput != "Echo: hello runtime" {
		t.Fatalf("final execution: state %s, output %v", final.State, final.FinalOutput)
	}
	if replay := c.events(exec.ID, 0); len(replay) != len(events) {
		t.Fatalf("JSON replay has %d events, the stream had %d", len(replay), len(events))
	}

	// Paths outside the protocol go to the next handler of the site.
	resp, err := c.http.Get(httpURL + "/not-the-protocol")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "next handler" {
		t.Fatalf("non-protocol path: %d %q", resp.StatusCode, body)
	}

	// The runtime's metrics are on Caddy's registry, which the admin endpoint serves. They are
	// per process and keep counting across configs, so compare with the values before the test.
	// The end of an execution is counted just after its terminal event is published, so a
	// client that saw the event may scrape a moment before the count moves: scrape until the
	// counts are in (bounded), then compare.
	wantIncrease := map[string]float64{
		`harness_executions_started_total{provider="mock"}`:                    1,
		`harness_executions_finished_total{provider="mock",state="succeeded"}`: 1,
		`harness_events_appended_total`:                                        7,
	}
	var metricsAfter string
	increase := func(series string) float64 {
		return metricValue(metricsAfter, series) - metricValue(metricsBefore, series)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		metricsAfter = scrapeMetrics(t)
		settled := true
		for series, n := range wantIncrease {
			settled = settled && increase(series) >= n
		}
		if settled || time.Now().After(deadline) {
			break
		}
	}
	for series, n := range wantIncrease {
		if got := increase(series); got != n {
			t.Errorf("%s increased by %v, want %v", series, got, n)
		}
	}
	if got := increase("harness_store_commit_duration_seconds_count"); got <= 0 {
		t.Errorf("no store commit was observed")
	}
	if got := metricValue(metricsAfter, "harness_sse_streams_open"); got != 0 {
		t.Errorf("harness_sse_streams_open = %v after every stream ended", got)
	}
	// Exported before any damaged record was met, so that an alert on its increase works.
	for _, kind := range []string{"execution", "event", "conversation"} {
		if series := `harness_store_undecodable_reads_total{kind="` + kind + `"} 0`; !strings.Contains(metricsAfter, series) {
			t.Errorf("%s is not exported", series)
		}
	}
}

// TestExecutionOverHTTPS serves the site with Caddy's internal CA and verifies the chain against
// that CA's root (no InsecureSkipVerify) on an HTTP/2 connection, SSE included.
func TestExecutionOverHTTPS(t *testing.T) {
	loadCaddyfile(t, site("https://localhost:9443", t.TempDir(), "tls internal"))

	roots := x509.NewCertPool()
	var ca struct {
		RootCertificate string `json:"root_certificate"`
	}
	newClient(t, adminURL, http.DefaultClient).do(http.MethodGet, "/pki/ca/local", nil, http.StatusOK, &ca)
	if !roots.AppendCertsFromPEM([]byte(ca.RootCertificate)) {
		t.Fatalf("no certificate in the CA's root_certificate: %q", ca.RootCertificate)
	}
	dialer := &net.Dialer{}
	hc := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: roots, ServerName: "localhost"},
		ForceAttemptHTTP2: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, "127.0.0.1:9443")
		},
	}}
	c := newClient(t, httpsURL, hc)

	// Caddy issues the site's certificate in the background after the load: wait for it.
	for attempt := 0; ; attempt++ {
		resp, err := hc.Get(httpsURL + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if attempt == 100 {
			t.Fatalf("no TLS handshake with the site: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	resp := c.do(http.MethodGet, "/healthz", nil, http.StatusOK, nil)
	if resp.ProtoMajor != 2 {
		t.Fatalf("protocol %s, want HTTP/2", resp.Proto)
	}
	if resp.TLS == nil || len(resp.TLS.VerifiedChains) == 0 {
		t.Fatal("the TLS connection was not verified against the internal CA")
	}

	conv := c.createConversation()
	exec := c.startExecution(api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "over tls"})
	s := c.openStream(exec.ID, "")
	if s.resp.ProtoMajor != 2 {
		t.Fatalf("stream protocol %s, want HTTP/2", s.resp.Proto)
	}
	events := s.readAll(t)
	assertContiguous(t, events, 1)
	if got := events[len(events)-1]; got.Type != api.StandardEventTypeRunCompleted || typed(got.Data.AsRunCompletedData()).FinalOutput != "Echo: over tls" {
		t.Fatalf("last event %s %v", got.Type, got.Data)
	}
}

// TestStreamIsIncremental shows that Caddy does not buffer the stream. First deterministically:
// the execution waits for an approval that only this test can give, so the events before it can
// reach the client only if they are flushed as they are appended. Then with the mock slowed down
// (delayMs 50 before each of 61 chunks): the first delta read from the stream must arrive while
// the execution is still running, before its terminal event has been appended.
func TestStreamIsIncremental(t *testing.T) {
	loadCaddyfile(t, site("http://localhost:9080", t.TempDir(), ""))
	c := newClient(t, httpURL, nil)

	conv := c.createConversation()
	exec := c.startExecution(api.StartExecutionRequest{
		ConversationID: conv.ID, ProviderID: "mock", Input: strings.Repeat("word ", 60),
		Config: api.JSONObject{"delayMs": 50, "requireApproval": true},
	})
	s := c.openStream(exec.ID, "")
	received := s.readUntil(t, api.StandardEventTypeActionRequired)
	if state := c.execution(exec.ID).State; state != api.ExecutionStateAwaitingApproval {
		t.Fatalf("execution state %s with action.required in hand, want awaiting_approval", state)
	}

	approved := true
	actionID := typed(received[len(received)-1].Data.AsActionRequest()).ID
	c.do(http.MethodPost, "/v1/executions/"+exec.ID+"/actions/"+actionID+":respond",
		api.ActionResponse{Approved: &approved}, http.StatusOK, nil)
	received = append(received, s.readUntil(t, api.StandardEventTypeOutputTextDelta)...)

	// What the server has at the moment the client holds its first delta.
	atFirstDelta := c.events(exec.ID, 0)
	for _, ev := range atFirstDelta {
		if isTerminal(ev.Type) {
			t.Fatalf("the first delta reached the client only after the terminal event was appended (%d events stored): the stream is buffered", len(atFirstDelta))
		}
	}
	if state := c.execution(exec.ID).State; state != api.ExecutionStateRunning {
		t.Fatalf("execution state %s when the first delta arrived, want running", state)
	}

	received = append(received, s.readAll(t)...)
	assertContiguous(t, received, 1)
	if deltas := countType(received, api.StandardEventTypeOutputTextDelta); deltas != 61 {
		t.Fatalf("%d deltas, want 61 (prefix and 60 words)", deltas)
	}
}

// TestReloadEndsStreamsAndKeepsExecutions reloads the config while a client streams an execution
// that waits for approval: the stream ends cleanly, the execution, its pending action and its
// idempotency record survive, the new config's providers are live, and the client resumes with
// Last-Event-ID without losing or repeating an event, including those appended while it was away.
func TestReloadEndsStreamsAndKeepsExecutions(t *testing.T) {
	dir := t.TempDir()
	loadCaddyfile(t, site("http://localhost:9080", dir, ""))
	c := newClient(t, httpURL, nil)

	conv := c.createConversation()
	key := "reload-key"
	request := api.StartExecutionRequest{
		ConversationID: conv.ID, ProviderID: "mock", Input: "survives the reload",
		Config:         api.JSONObject{"requireApproval": true},
		IdempotencyKey: &key,
	}
	exec := c.startExecution(request)

	s := c.openStream(exec.ID, "")
	before := s.readUntil(t, api.StandardEventTypeActionRequired)
	action := before[len(before)-1]
	actionID := typed(action.Data.AsActionRequest()).ID
	if actionID == "" {
		t.Fatalf("action.required without an id: %v", action.Data)
	}

	// The reload: same store, spelt as a store module this time (the pool knows it by its
	// identity, bolt:<absolute dir>, not by how the config names it), one more provider,
	// another heartbeat.
	reloadCaddyfile(t, fmt.Sprintf(`
http://localhost:9080 {
	harness {
		store bolt {
			path %s
		}
		heartbeat 5s
		provider mock
		provider mock second
	}
}
`, dir))

	// The old config's stream ends without a terminal event: nothing could have finished.
	if rest := s.readAll(t); len(rest) != 0 {
		t.Fatalf("events after the reload on the old stream: %v", types(rest))
	}

	var runtime api.RuntimeDescription
	c.do(http.MethodGet, "/v1/runtime", nil, http.StatusOK, &runtime)
	if ids := providerIDs(runtime.Providers); !slices.Equal(ids, []string{"mock", "second"}) {
		t.Fatalf("providers after the reload: %v", ids)
	}
	if state := c.execution(exec.ID).State; state != api.ExecutionStateAwaitingApproval {
		t.Fatalf("state after the reload %s, want awaiting_approval", state)
	}
	var replayed api.Execution
	resp := c.do(http.MethodPost, "/v1/executions", request, http.StatusAccepted, &replayed)
	if replayed.ID != exec.ID || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("idempotent replay after the reload: id %s (want %s), Idempotent-Replayed %q", replayed.ID, exec.ID, resp.Header.Get("Idempotent-Replayed"))
	}

	// Answer while no stream is open: the events it causes must be replayed on resume.
	approved := true
	c.do(http.MethodPost, "/v1/executions/"+exec.ID+"/actions/"+actionID+":respond",
		api.ActionResponse{Approved: &approved}, http.StatusOK, nil)

	lastSeen := before[len(before)-1].Sequence
	resumed := c.openStream(exec.ID, strconv.FormatInt(lastSeen, 10)).readAll(t)
	assertContiguous(t, resumed, lastSeen+1)
	if resumed[0].Type != api.StandardEventTypeActionResponded {
		t.Fatalf("first resumed event %s, want action.responded", resumed[0].Type)
	}
	final := c.execution(exec.ID)
	if final.State != api.ExecutionStateSucceeded || *final.FinalOutput != "Echo: survives the reload" {
		t.Fatalf("after the reload the execution ended %s with %v", final.State, final.FinalOutput)
	}
	assertContiguous(t, append(before, resumed...), 1)
}

// TestFailedReloadKeepsProviders loads a config whose harness handler is provisioned (and so
// registers its providers) before another handler of the same config fails: the running config
// must keep its providers.
func TestFailedReloadKeepsProviders(t *testing.T) {
	dir := t.TempDir()
	loadCaddyfile(t, site("http://localhost:9080", dir, ""))
	c := newClient(t, httpURL, nil)

	status, body := postLoad(t, fmt.Sprintf(`
http://localhost:9080 {
	harness {
		data_dir %s
		provider mock
		provider mock second
	}
	route {
		harness {
			data_dir %s
			heartbeat -1s
		}
	}
}
`, dir, dir))
	if status == http.StatusOK || !strings.Contains(body, "heartbeat must not be negative") {
		t.Fatalf("the bad config loaded: %d %s", status, body)
	}

	var runtime api.RuntimeDescription
	c.do(http.MethodGet, "/v1/runtime", nil, http.StatusOK, &runtime)
	if ids := providerIDs(runtime.Providers); !slices.Equal(ids, []string{"mock"}) {
		t.Fatalf("providers after a failed reload: %v, want [mock]", ids)
	}
	conv := c.createConversation()
	exec := c.startExecution(api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "still here"})
	assertContiguous(t, c.openStream(exec.ID, "").readAll(t), 1)
}

func providerIDs(ms []api.ProviderManifest) []string {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	return ids
}

func countType(events []api.RuntimeEvent, typ api.StandardEventType) int {
	n := 0
	for _, ev := range events {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

func scrapeMetrics(t *testing.T) string {
	t.Helper()
	resp, err := http.Get(adminURL + "/metrics")
	if err != nil {
		t.Fatalf("scraping metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scraping metrics: %d %v", resp.StatusCode, err)
	}
	return string(body)
}

// metricValue reads one series ("name" or "name{labels}") from the text exposition format; an
// absent series counts as 0.
func metricValue(exposition, series string) float64 {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(exposition)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// TestACPProvidersFromJSON configures the server with JSON (the form `caddy adapt` produces and
// the admin API takes) and two instances of the ACP provider running the acp package's fixture
// agent: each instance has its own id, the agent gets exactly the configured environment, and a
// {env.…} placeholder is resolved at load without the secret appearing in the config.
func TestACPProvidersFromJSON(t *testing.T) {
	agent := filepath.Join(t.TempDir(), "fixture-agent")
	build := exec.Command("go", "build", "-o", agent, "../backend/providers/acp/testdata/fixture-agent")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the ACP fixture agent: %v\n%s", err, out)
	}
	t.Setenv("HARNESS_TEST_SECRET", "s3cret")
	agentLog := filepath.Join(t.TempDir(), "agent.log")

	config := map[string]any{
		"admin": map[string]any{"listen": "localhost:2999", "config": map[string]any{"persist": false}},
		"apps": map[string]any{"http": map[string]any{
			"grace_period": "1ns",
			"servers": map[string]any{"srv0": map[string]any{
				"listen": []string{":9080"},
				"routes": []any{map[string]any{"handle": []any{map[string]any{
					"handler":  "harness",
					"data_dir": t.TempDir(),
					"providers": []any{
						map[string]any{"provider": "mock"},
						map[string]any{"provider": "acp", "id": "agent-env", "command": agent,
							"env": map[string]string{"ACP_FIXTURE_SCENARIO": "env", "SECRET": "{env.HARNESS_TEST_SECRET}"}},
						map[string]any{"provider": "acp", "id": "agent-stream", "command": agent,
							"env": map[string]string{"ACP_FIXTURE_SCENARIO": "stream", "ACP_FIXTURE_LOG": agentLog}, "run_timeout": "1m"},
					},
				}}}},
			}},
		}},
	}
	raw, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	caddytest.NewTester(t).InitServer(string(raw), "json")
	if t.Failed() {
		t.FailNow()
	}
	t.Cleanup(func() { unloadConfig(t) })
	c := newClient(t, httpURL, nil)

	var runtime api.RuntimeDescription
	c.do(http.MethodGet, "/v1/runtime", nil, http.StatusOK, &runtime)
	if ids := providerIDs(runtime.Providers); !slices.Equal(ids, []string{"mock", "agent-env", "agent-stream"}) {
		t.Fatalf("providers %v", ids)
	}
	// The agent was asked initialize at provision: it can neither resume nor load a session, so
	// a conversation is remembered only while its process stays warm.
	if level := runtime.Providers[1].Capabilities["conversation.continuity"]; level != api.SupportLevelDegraded {
		t.Fatalf("agent-env continuity %s, want degraded (the fixture offers neither session/resume nor session/load)", level)
	}

	conv := c.createConversation()
	run := func(provider string) string {
		exec := c.startExecution(api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: provider, Input: "hi"})
		events := c.openStream(exec.ID, "").readAll(t)
		assertContiguous(t, events, 1)
		final := c.execution(exec.ID)
		if final.State != api.ExecutionStateSucceeded || final.FinalOutput == nil {
			t.Fatalf("%s: execution ended %s (%+v)", provider, final.State, final.Error)
		}
		return *final.FinalOutput
	}
	if got := run("agent-stream"); got != "ACP fixture" {
		t.Fatalf("agent-stream output %q", got)
	}
	if got, want := run("agent-env"), "ACP_FIXTURE_SCENARIO=env\nSECRET=s3cret"; got != want {
		t.Fatalf("the agent's environment is %q, want exactly %q", got, want)
	}

	var current bytes.Buffer
	resp, err := http.Get(adminURL + "/config/")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = current.ReadFrom(resp.Body)
	resp.Body.Close()
	if strings.Contains(current.String(), "s3cret") {
		t.Fatal("the resolved secret is in the running config")
	}

	// agent-stream's process waits warm for the conversation; a new config (here: none) ends it
	// with the old one's providers (Cleanup), rather than leaving it behind.
	warm := fixturePIDs(t, agentLog)
	if len(warm) != 2 || !processRuns(warm[1]) { // the probe's, then the conversation's
		t.Fatalf("agent-stream processes %v, want the probe's and a warm one", warm)
	}
	unloadConfig(t)
	if processRuns(warm[1]) {
		t.Fatalf("the warm agent (pid %d) outlived the config it belonged to", warm[1])
	}
}

// fixturePIDs are the pids of the fixture agents that answered initialize, in order.
func fixturePIDs(t *testing.T, agentLog string) []int {
	t.Helper()
	data, err := os.ReadFile(agentLog)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, line := range strings.Split(string(data), "\n") {
		if _, pid, ok := strings.Cut(line, " pid="); ok && strings.HasPrefix(line, "initialize ") {
			n, err := strconv.Atoi(pid)
			if err != nil {
				t.Fatalf("agent log line %q", line)
			}
			pids = append(pids, n)
		}
	}
	return pids
}

// processRuns reports whether pid exists and is not a zombie.
func processRuns(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}
