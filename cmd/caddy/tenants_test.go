package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/conformance"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// These tests run the real binary with examples/tenants.Caddyfile: basic_auth with the users
// alice and bob (their bcrypt hashes made by `caddy hash-password`, passed in the environment as
// the file documents), `tenant {http.auth.user.id}` and handle_errors answering Problem JSON.

const tenantsCaddyfile = "../../examples/tenants.Caddyfile"

var passwords = map[string]string{"alice": "alice's password", "bob": "bob's password"}

// tenantsEnv is instanceEnv plus the users' hashes and a bound on running executions.
func tenantsEnv(t *testing.T, bin string, maxRunning int) []string {
	t.Helper()
	env := instanceEnv(t)
	for user, password := range passwords {
		// The lowest cost keeps the race-instrumented server quick; the default is for real use.
		out, err := exec.Command(bin, "hash-password", "--plaintext", password, "--bcrypt-cost", "4").Output()
		if err != nil {
			t.Fatalf("caddy hash-password: %v", err)
		}
		env = append(env, "HARNESS_"+strings.ToUpper(user)+"_HASH="+strings.TrimSpace(string(out)))
	}
	return append(env, fmt.Sprintf("HARNESS_MAX_RUNNING=%d", maxRunning))
}

// user is a client authenticated as one tenant (password "" sends no credentials).
type user struct {
	t        *testing.T
	base     string
	name     string
	password string
}

func (u user) send(method, path, body string, header map[string]string) (int, http.Header, []byte) {
	u.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(u.t.Context(), method, u.base+path, rd)
	if err != nil {
		u.t.Fatal(err)
	}
	if u.password != "" {
		req.SetBasicAuth(u.name, u.password)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		u.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		u.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, raw
}

func (u user) must(method, path, body string, want int) map[string]any {
	u.t.Helper()
	status, _, raw := u.send(method, path, body, nil)
	if status != want {
		u.t.Fatalf("%s: %s %s: status %d, want %d: %s", u.name, method, path, status, want, raw)
	}
	return decode(u.t, raw)
}

func (u user) conversation() string {
	u.t.Helper()
	return u.must(http.MethodPost, "/v1/conversations", "{}", http.StatusCreated)["id"].(string)
}

func (u user) start(conv, input string, approval bool, key string) map[string]any {
	u.t.Helper()
	return u.must(http.MethodPost, "/v1/executions", startBody(conv, input, approval, key), http.StatusAccepted)
}

func startBody(conv, input string, approval bool, key string) string {
	req := map[string]any{"conversationId": conv, "providerId": "mock", "input": input}
	if approval {
		req["config"] = map[string]any{"requireApproval": true}
	}
	if key != "" {
		req["idempotencyKey"] = key
	}
	b, _ := json.Marshal(req)
	return string(b)
}

// untilEvent reads the execution's SSE stream until an event of type typ and returns its data.
func (u user) untilEvent(id string, typ api.StandardEventType) api.EventData {
	u.t.Helper()
	req, err := http.NewRequestWithContext(u.t.Context(), http.MethodGet, u.base+"/v1/executions/"+id+"/events", nil)
	if err != nil {
		u.t.Fatal(err)
	}
	req.SetBasicAuth(u.name, u.password)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		u.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		u.t.Fatalf("stream of %s: status %d", id, resp.StatusCode)
	}
	scanner := bufio.NewScanner(resp.Body)
	scanner.Buffer(nil, 1<<20)
	for scanner.Scan() {
		data, ok := strings.CutPrefix(scanner.Text(), "data: ")
		if !ok {
			continue
		}
		var ev api.RuntimeEvent
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			u.t.Fatalf("event %q: %v", data, err)
		}
		if ev.Type == typ {
			return ev.Data
		}
	}
	u.t.Fatalf("stream of %s ended before %s", id, typ)
	return api.EventData{}
}

// TestTenantsExampleIsolatesUsers is the isolation matrix through the real binary: every route
// that takes an id, asked by bob about alice's objects, answers byte for byte what it answers
// for unknown ids; idempotency keys are per tenant; requests without (or with wrong)
// credentials get basic_auth's challenge with a Problem body.
func TestTenantsExampleIsolatesUsers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)
	srv := startCaddyWith(t, bin, tenantsEnv(t, bin, 8), tenantsCaddyfile)
	defer srv.stop(t)
	alice := user{t, srv.url, "alice", passwords["alice"]}
	bob := user{t, srv.url, "bob", passwords["bob"]}

	conv := alice.conversation()
	exec := alice.start(conv, "alice secret task", true, "")["id"].(string)
	action := typed(alice.untilEvent(exec, api.StandardEventTypeActionRequired).AsActionRequest()).ID

	const unknownConv, unknownExec = "conv_0123456789abcdef0123456789abcdef", "exec_0123456789abcdef0123456789abcdef"
	routes := func(conv, id string) map[string][3]string { // name → method, path, body
		return map[string][3]string{
			"get conversation":      {http.MethodGet, "/v1/conversations/" + conv, ""},
			"start in conversation": {http.MethodPost, "/v1/executions", startBody(conv, "intrude", false, "")},
			"get execution":         {http.MethodGet, "/v1/executions/" + id, ""},
			"events (JSON)":         {http.MethodGet, "/v1/executions/" + id + "/events", ""},
			"events (SSE)":          {"SSE", "/v1/executions/" + id + "/events", ""},
			"artifacts":             {http.MethodGet, "/v1/executions/" + id + "/artifacts", ""},
			"cancel":                {http.MethodPost, "/v1/executions/" + id + ":cancel", `{"reason":"intruder"}`},
			"respond":               {http.MethodPost, "/v1/executions/" + id + "/actions/" + action + ":respond", `{"approved":true}`},
		}
	}
	ask := func(u user, r [3]string) (int, http.Header, []byte) {
		if r[0] == "SSE" {
			return u.send(http.MethodGet, r[1], "", map[string]string{"Accept": "text/event-stream"})
		}
		return u.send(r[0], r[1], r[2], nil)
	}
	undo := strings.NewReplacer(unknownConv, conv, unknownExec, exec)
	unknown := routes(unknownConv, unknownExec)
	for name, r := range routes(conv, exec) {
		status, header, body := ask(bob, r)
		wantStatus, wantHeader, wantBody := ask(bob, unknown[name])
		if status != http.StatusNotFound || status != wantStatus || string(body) != undo.Replace(string(wantBody)) {
			t.Errorf("%s: bob got %d %s; an unknown id gets %d %s", name, status, body, wantStatus, wantBody)
		}
		if header.Get("Content-Type") != wantHeader.Get("Content-Type") {
			t.Errorf("%s: Content-Type %q, for an unknown id %q", name, header.Get("Content-Type"), wantHeader.Get("Content-Type"))
		}
	}
	if state := alice.must(http.MethodGet, "/v1/executions/"+exec, "", http.StatusOK)["state"]; state != string(api.ExecutionStateAwaitingApproval) {
		t.Fatalf("alice's execution after bob's requests: %v", state)
	}
	if got := alice.must(http.MethodGet, "/v1/executions/"+exec, "", http.StatusOK)["input"]; got != "alice secret task" {
		t.Fatalf("alice reads her own input as %v", got)
	}

	t.Run("idempotency keys are per tenant", func(t *testing.T) {
		aliceConv, bobConv := alice.conversation(), bob.conversation()
		first := alice.start(aliceConv, "same", false, "shared-key")["id"]
		second := bob.start(bobConv, "same", false, "shared-key")["id"]
		if first == second {
			t.Fatalf("alice and bob got one execution %v for the same key", first)
		}
		status, header, raw := alice.send(http.MethodPost, "/v1/executions", startBody(aliceConv, "same", false, "shared-key"), nil)
		if status != http.StatusAccepted || header.Get("Idempotent-Replayed") != "true" || decode(t, raw)["id"] != first {
			t.Fatalf("alice's replay: %d %s %s", status, header, raw)
		}
		// Bob replaying alice's exact request (her conversation, her key) learns nothing: not
		// her execution, not a 409, but the conversation's 404.
		status, _, raw = bob.send(http.MethodPost, "/v1/executions", startBody(aliceConv, "same", false, "shared-key"), nil)
		want := fmt.Sprintf(`{"code":"NOT_FOUND","message":"Conversation not found: %s"}`, aliceConv)
		if status != http.StatusNotFound || string(raw) != want {
			t.Fatalf("bob replaying alice's key: %d %s", status, raw)
		}
		status, _, raw = bob.send(http.MethodPost, "/v1/executions", startBody(aliceConv, "different", false, "shared-key"), nil)
		if status != http.StatusNotFound || string(raw) != want {
			t.Fatalf("bob reusing alice's key with another request: %d %s", status, raw)
		}
	})

	t.Run("no or wrong credentials", func(t *testing.T) {
		// (Not an unknown user: Caddy then compares with a fake hash of the default cost, 14,
		// which takes minutes under the race detector on a small machine.)
		for _, u := range []user{{t, srv.url, "alice", ""}, {t, srv.url, "alice", "wrong"}} {
			status, header, raw := u.send(http.MethodGet, "/v1/executions/"+exec, "", nil)
			if status != http.StatusUnauthorized || header.Get("Content-Type") != "application/json" ||
				string(raw) != `{"code":"UNAUTHENTICATED","message":"Authentication is required (401 Unauthorized)"}` {
				t.Fatalf("%s/%q: %d %q %s", u.name, u.password, status, header.Get("Content-Type"), raw)
			}
			if !strings.HasPrefix(header.Get("WWW-Authenticate"), "Basic") {
				t.Fatalf("401 without basic_auth's challenge: %v", header)
			}
		}
	})

	// `identity {http.auth.user.id}`: the cancellation names the basic_auth user who made it.
	reason := `{"reason":"done"}`
	alice.must(http.MethodPost, "/v1/executions/"+exec+":cancel", reason, http.StatusOK)
	if d := typed(alice.untilEvent(exec, api.StandardEventTypeRunCancelled).AsRunCancelledData()); d.Actor == nil || d.Actor.ID != "alice" || d.Reason == nil || *d.Reason != "done" {
		t.Fatalf("run.cancelled data: actor %+v, reason %v; want alice, done", d.Actor, d.Reason)
	}
}

// TestTenantsExampleMaxRunning: with HARNESS_MAX_RUNNING=2, alice's third running execution is
// refused with 429 RATE_LIMITED and Retry-After while bob still starts his; once alice's
// first one finished (approved, then run.completed on her stream), her next start succeeds at
// once.
func TestTenantsExampleMaxRunning(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)
	srv := startCaddyWith(t, bin, tenantsEnv(t, bin, 2), tenantsCaddyfile)
	defer srv.stop(t)
	alice := user{t, srv.url, "alice", passwords["alice"]}
	bob := user{t, srv.url, "bob", passwords["bob"]}

	conv := alice.conversation()
	first := alice.start(conv, "one", true, "")["id"].(string)
	alice.start(conv, "two", true, "")
	status, header, raw := alice.send(http.MethodPost, "/v1/executions", startBody(conv, "three", true, "k3"), nil)
	if status != http.StatusTooManyRequests || header.Get("Retry-After") != "1" ||
		string(raw) != `{"code":"RATE_LIMITED","message":"Too many executions running at once (at most 2); retry when one has finished"}` {
		t.Fatalf("alice's third start: %d Retry-After %q %s", status, header.Get("Retry-After"), raw)
	}
	bob.start(bob.conversation(), "bob's", true, "")

	action := typed(alice.untilEvent(first, api.StandardEventTypeActionRequired).AsActionRequest()).ID
	alice.must(http.MethodPost, "/v1/executions/"+first+"/actions/"+action+":respond", `{"approved":true}`, http.StatusOK)
	// `identity {http.auth.user.id}`: the answer names the basic_auth user who gave it.
	if d := typed(alice.untilEvent(first, api.StandardEventTypeActionResponded).AsActionRespondedData()); d.Actor == nil || d.Actor.ID != "alice" {
		t.Fatalf("action.responded data: actor %+v, want alice", d.Actor)
	}
	alice.untilEvent(first, api.StandardEventTypeRunCompleted)
	// The same request (same idempotency key, which the 429 did not register) now starts.
	status, header, raw = alice.send(http.MethodPost, "/v1/executions", startBody(conv, "three", true, "k3"), nil)
	if status != http.StatusAccepted || header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("alice's start after one finished: %d %s", status, raw)
	}
}

// TestConformanceAsOneTenantBesideAnothersLoad runs the portable conformance suite as alice
// (basic authentication on every request) while bob runs a bounded load of executions beside
// it: alice's suite passes as on a single-tenant server, and every one of bob's executions
// succeeds.
func TestConformanceAsOneTenantBesideAnothersLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)
	srv := startCaddyWith(t, bin, tenantsEnv(t, bin, 64), tenantsCaddyfile)
	defer srv.stop(t)
	bob := user{t, srv.url, "bob", passwords["bob"]}

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	stop := make(chan struct{})
	var bobRuns atomic.Int64
	var wg sync.WaitGroup
	const workers, maxRunsEach = 2, 200 // bounded: the load ends with the suite or at 400 runs
	loadErrs := make(chan error, workers)
	for range workers {
		conv := bob.conversation()
		wg.Go(func() {
			for range maxRunsEach {
				select {
				case <-stop:
					return
				default:
				}
				if err := bob.runToCompletion(ctx, conv); err != nil {
					loadErrs <- err
					return
				}
				bobRuns.Add(1)
			}
		})
	}

	auth := "Basic " + basicCredentials("alice", passwords["alice"])
	report, err := conformance.Run(ctx, conformance.Options{
		BaseURL:    srv.url,
		ProviderID: "mock",
		Header:     http.Header{"Authorization": {auth}},
	})
	close(stop)
	wg.Wait()
	close(loadErrs)
	for err := range loadErrs {
		t.Errorf("bob's load: %v", err)
	}
	if err != nil {
		t.Fatalf("conformance: %v", err)
	}
	for _, c := range report.Checks {
		if !c.Passed && !c.Skipped {
			t.Errorf("%s", c)
		}
	}
	t.Logf("alice's conformance: %s; bob ran %d executions beside it", report.Summary(), bobRuns.Load())
	if bobRuns.Load() == 0 {
		t.Fatal("bob's load ran no execution while the suite ran")
	}
}

func basicCredentials(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}

// runToCompletion starts one execution as u in conv and reads its stream to run.completed; it
// reports failures as errors, for load goroutines (which must not call t.Fatal).
func (u user) runToCompletion(ctx context.Context, conv string) error {
	do := func(method, path, body string, header map[string]string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, method, u.base+path, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.SetBasicAuth(u.name, u.password)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		return http.DefaultClient.Do(req)
	}
	// A start on a keep-alive connection the server closes at that moment fails in transport
	// before any answer; as every client that retries does (the SDK's, through retryablehttp),
	// the load retries it, and its idempotency key makes the retry safe: it starts at most one
	// execution, whether or not the first attempt reached the runtime.
	body := startBody(conv, "load", false, "load-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	var resp *http.Response
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if resp, err = do(http.MethodPost, "/v1/executions", body, nil); err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return err
	}
	var exec api.Execution
	err = json.NewDecoder(resp.Body).Decode(&exec)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("start: status %d, %v", resp.StatusCode, err)
	}
	resp, err = do(http.MethodGet, "/v1/executions/"+exec.ID+"/events", "", map[string]string{"Accept": "text/event-stream"})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	scanner := bufio.NewScanner(resp.Body)
	for scanner.Scan() {
		if scanner.Text() == "event: "+string(api.StandardEventTypeRunCompleted) {
			return nil
		}
	}
	return errors.New("the stream of " + exec.ID + " ended without run.completed")
}
