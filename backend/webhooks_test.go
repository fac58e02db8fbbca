package backend_test

import (
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	"github.com/pb33f/libopenapi-validator/schema_validation"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/webhook"
	"github.com/harness-edge/harness-edge/openapi"
	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

var webhookSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("a test secret of 32 bytes long!!"))

// fastRetries makes retries quick enough for tests; the defaults are seconds to minutes.
var fastRetries = webhook.Delivery{MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}

// receivedWebhook is one verified request.
type receivedWebhook struct {
	id      string
	body    []byte
	payload api.WebhookPayload
	status  int
}

// webhookReceiver is a real HTTP receiver: it verifies every request with sdk.VerifyWebhook
// and answers what respond says (200 when nil).
type webhookReceiver struct {
	t       testing.TB
	respond func(attempt int, p api.WebhookPayload) int

	mu       sync.Mutex
	requests []receivedWebhook
}

func (rc *webhookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	p, err := sdk.VerifyWebhook(webhookSecret, r.Header, body)
	if err != nil {
		rc.t.Errorf("notification refused by VerifyWebhook: %v", err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	attempt := len(rc.requests)
	rc.mu.Unlock()
	status := http.StatusOK
	if rc.respond != nil {
		status = rc.respond(attempt, p)
	}
	rc.mu.Lock()
	rc.requests = append(rc.requests, receivedWebhook{id: r.Header.Get("webhook-id"), body: body, payload: p, status: status})
	rc.mu.Unlock()
	w.WriteHeader(status)
}

// delivered returns the acknowledged notifications in arrival order.
func (rc *webhookReceiver) delivered() []receivedWebhook {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []receivedWebhook
	for _, r := range rc.requests {
		if r.status >= 200 && r.status < 300 {
			out = append(out, r)
		}
	}
	return out
}

func (rc *webhookReceiver) all() []receivedWebhook {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.requests)
}

func newReceiver(t testing.TB, respond func(int, api.WebhookPayload) int) (*webhookReceiver, *httptest.Server) {
	rc := &webhookReceiver{t: t, respond: respond}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	return rc, srv
}

// eventually polls cond until it holds; the deadline is a hang guard, not a threshold.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// notifier builds the webhooks of one runtime from cfg.
func notifier(t testing.TB, cfg webhook.Config) backend.Webhooks {
	t.Helper()
	n, err := webhook.New(cfg)
	if err != nil {
		t.Fatalf("webhook.New: %v", err)
	}
	return n
}

func pendingWebhooks(t testing.TB, rt *backend.Runtime) int {
	t.Helper()
	n, err := backend.PendingWebhooks(rt)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestWebhookNotificationsAreSignedOrderedAndCarryTheSnapshot(t *testing.T) {
	rc, srv := newReceiver(t, nil)
	rt := openRuntime(t, "", backend.Options{Webhooks: notifier(t, webhook.Config{Subscriptions: []webhook.Subscription{{
		URL: srv.URL + "/hooks", Secret: webhookSecret, Events: []string{"run.queued", "run.started", "run.completed"},
	}}})})
	conv := newConversation(t, rt)
	exec := start(t, rt, conv, startOpts{input: "hello"})
	collect(t, rt, exec.ID, 0)
	eventually(t, "three notifications", func() bool { return len(rc.delivered()) == 3 })

	got := rc.delivered()
	wantTypes := []api.StandardEventType{"run.queued", "run.started", "run.completed"}
	wantStates := []api.ExecutionState{"queued", "running", "succeeded"}
	for i, d := range got {
		p := d.payload
		if p.Type != wantTypes[i] || p.Data.Event.Type != wantTypes[i] {
			t.Errorf("notification %d: type %s (event %s), want %s", i, p.Type, p.Data.Event.Type, wantTypes[i])
		}
		if p.Data.Execution.ID != exec.ID || p.Data.Execution.State != wantStates[i] {
			t.Errorf("notification %d: snapshot %s in state %s, want %s in %s", i, p.Data.Execution.ID, p.Data.Execution.State, exec.ID, wantStates[i])
		}
		if p.Timestamp != p.Data.Event.Time {
			t.Errorf("notification %d: timestamp %s, event time %s", i, p.Timestamp, p.Data.Event.Time)
		}
		if want := fmt.Sprintf("msg_%s_%d", exec.ID[len("exec_"):], p.Data.Event.Sequence); d.id != want {
			t.Errorf("notification %d: webhook-id %q, want %q", i, d.id, want)
		}
	}
	for _, d := range got {
		checkAgainstSchema(t, "WebhookPayload", d.body)
	}
	if final := got[2].payload.Data.Execution; final.FinalOutput == nil || final.EndedAt == nil {
		t.Errorf("terminal snapshot lacks finalOutput/endedAt: %+v", final)
	}
	eventually(t, "an empty outbox", func() bool { return pendingWebhooks(t, rt) == 0 })
}

func TestWebhookRetriedUntilDelivered(t *testing.T) {
	rc, srv := newReceiver(t, func(attempt int, _ api.WebhookPayload) int {
		if attempt < 2 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	rt := openRuntime(t, "", backend.Options{Webhooks: notifier(t, webhook.Config{
		Subscriptions: []webhook.Subscription{{URL: srv.URL, Secret: webhookSecret}},
		Delivery:      fastRetries,
	})})
	exec := start(t, rt, newConversation(t, rt), startOpts{input: "x"})
	collect(t, rt, exec.ID, 0)
	eventually(t, "the delivery", func() bool { return len(rc.delivered()) == 1 })
	eventually(t, "an empty outbox", func() bool { return pendingWebhooks(t, rt) == 0 })
	all := rc.all()
	if len(all) != 3 {
		t.Fatalf("%d requests, want 3 (500, 500, 200)", len(all))
	}
	for _, r := range all {
		if r.id != all[0].id || r.payload.Type != "run.completed" {
			t.Fatalf("attempts differ: %+v", all)
		}
	}
}

func TestWebhookDeliveredAfterRestart(t *testing.T) {
	// Reserve an address, then leave nothing listening on it: the receiver is down.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	dir := t.TempDir()
	cfg := webhook.Config{
		Subscriptions: []webhook.Subscription{{URL: "http://" + addr + "/hook", Secret: webhookSecret}},
		Delivery:      fastRetries,
	}
	before := &webhookCounts{}
	cfg.Observer = before
	rt := openRuntime(t, dir, backend.Options{Webhooks: notifier(t, cfg)})
	exec := start(t, rt, newConversation(t, rt), startOpts{input: "x"})
	collect(t, rt, exec.ID, 0)
	if n := pendingWebhooks(t, rt); n != 1 {
		t.Fatalf("%d notifications pending while the receiver is down, want 1", n)
	}
	eventually(t, "a failed attempt", func() bool { return before.retried.Load() >= 1 })
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}

	rc := &webhookReceiver{t: t}
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the receiver cannot listen on %s again (taken meanwhile by another process; rerun): %v", addr, err)
	}
	srv := &http.Server{Handler: rc}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	after := &webhookCounts{}
	cfg.Observer = after
	rt = openRuntime(t, dir, backend.Options{Webhooks: notifier(t, cfg)})
	eventually(t, "the delivery after the restart", func() bool { return len(rc.delivered()) == 1 })
	eventually(t, "the delivery counted", func() bool { return after.delivered.Load() == 1 })
	if before.delivered.Load() != 0 || before.failed.Load() != 0 || after.failed.Load() != 0 {
		t.Fatalf("counts before %+v, after %+v", before, after)
	}
	if p := rc.delivered()[0].payload; p.Type != "run.completed" || p.Data.Execution.ID != exec.ID {
		t.Fatalf("delivered %s of %s, want run.completed of %s", p.Type, p.Data.Execution.ID, exec.ID)
	}
	eventually(t, "an empty outbox", func() bool { return pendingWebhooks(t, rt) == 0 })
}

// A receiver that does not answer holds no execution back: executions finish while every
// delivery waits, and the notifications go out once it answers.
func TestWebhookSlowReceiverDoesNotSlowExecutions(t *testing.T) {
	release := make(chan struct{})
	rc, srv := newReceiver(t, func(int, api.WebhookPayload) int {
		<-release
		return http.StatusOK
	})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	rt := openRuntime(t, "", backend.Options{Webhooks: notifier(t, webhook.Config{
		Subscriptions: []webhook.Subscription{{URL: srv.URL, Secret: webhookSecret}},
		Delivery:      webhook.Delivery{Workers: 2, Timeout: time.Minute},
	})})
	conv := newConversation(t, rt)
	var ids []string
	for range 10 {
		exec := start(t, rt, conv, startOpts{input: "x"})
		collect(t, rt, exec.ID, 0)
		if e := getExecution(t, rt, exec.ID); e.State != api.ExecutionStateSucceeded {
			t.Fatalf("execution %s is %s", exec.ID, e.State)
		}
		ids = append(ids, exec.ID)
	}
	if n := len(rc.delivered()); n != 0 {
		t.Fatalf("%d deliveries acknowledged while the receiver was blocked", n)
	}
	if n := pendingWebhooks(t, rt); n != 10 {
		t.Fatalf("%d notifications pending, want 10 (all executions finished first)", n)
	}
	close(release)
	eventually(t, "ten deliveries", func() bool { return len(rc.delivered()) == 10 })
	var got []string
	for _, d := range rc.delivered() {
		got = append(got, d.payload.Data.Execution.ID)
	}
	slices.Sort(got)
	if !slices.Equal(got, ids) { // ids are time-ordered, so sorted
		t.Fatalf("delivered %v, want %v", got, ids)
	}
}

// 1,000 executions, a receiver failing one request in seven: every execution's notifications
// arrive, once each, in order.
func TestWebhookThousandExecutionsNoneLostInOrder(t *testing.T) {
	const executions = 1000
	rc, srv := newReceiver(t, func(attempt int, _ api.WebhookPayload) int {
		if attempt%7 == 3 {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	})
	rt := openRuntime(t, "", backend.Options{Webhooks: notifier(t, webhook.Config{
		Subscriptions: []webhook.Subscription{{
			URL: srv.URL, Secret: webhookSecret, Events: []string{"run.started", "run.completed"},
		}},
		Delivery: fastRetries,
	})})
	runMockExecutions(t, executions, 32, rt)
	eventually(t, "2,000 deliveries", func() bool { return len(rc.delivered()) >= 2*executions })
	eventually(t, "an empty outbox", func() bool { return pendingWebhooks(t, rt) == 0 })
	checkStartedThenCompleted(t, rc.delivered(), executions)
}

// runMockExecutions runs n quick mock executions, at most concurrent at a time, spread over
// the runtimes in turn (each on its own runtime's conversation), and follows each to its end.
func runMockExecutions(t *testing.T, n, concurrent int, runtimes ...*backend.Runtime) {
	t.Helper()
	convs := make([]string, len(runtimes))
	for i, rt := range runtimes {
		convs[i] = newConversation(t, rt)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, concurrent)
	for i := range n {
		rt, conv := runtimes[i%len(runtimes)], convs[i%len(runtimes)]
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			exec, _, err := rt.StartExecution(ctxT(t), startReq(conv, startOpts{input: "x", config: api.JSONObject{"delayMs": 0}}))
			if err != nil {
				t.Errorf("StartExecution: %v", err)
				return
			}
			for _, err := range backend.FollowExecution(ctxT(t), rt, exec.ID, 0) {
				if err != nil {
					t.Errorf("Follow: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// checkStartedThenCompleted checks that delivered holds, for each of n executions, exactly
// run.started then run.completed, each notification acknowledged once.
func checkStartedThenCompleted(t *testing.T, delivered []receivedWebhook, n int) {
	t.Helper()
	byExec := map[string][]api.StandardEventType{}
	seen := map[string]bool{}
	for _, d := range delivered {
		if seen[d.id] {
			t.Fatalf("notification %s acknowledged twice", d.id)
		}
		seen[d.id] = true
		id := d.payload.Data.Execution.ID
		byExec[id] = append(byExec[id], d.payload.Type)
	}
	if len(byExec) != n {
		t.Fatalf("notifications of %d executions, want %d", len(byExec), n)
	}
	for id, typs := range byExec {
		if !slices.Equal(typs, []api.StandardEventType{"run.started", "run.completed"}) {
			t.Fatalf("execution %s: notifications %v, want run.started then run.completed", id, typs)
		}
	}
}

// 410 Gone records the notification as failed at once; retention deletes failed and pending rows.
func TestWebhookGoneAndRetention(t *testing.T) {
	_, gone := newReceiver(t, func(int, api.WebhookPayload) int { return http.StatusGone })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	rt := openRuntime(t, "", backend.Options{Webhooks: notifier(t, webhook.Config{
		Subscriptions: []webhook.Subscription{
			{URL: gone.URL, Secret: webhookSecret},
			{URL: down, Secret: webhookSecret},
		},
		// The down receiver's notification waits an hour for its next attempt.
		Delivery: webhook.Delivery{MinBackoff: time.Hour, MaxBackoff: time.Hour},
	})})
	exec := start(t, rt, newConversation(t, rt), startOpts{input: "x"})
	collect(t, rt, exec.ID, 0)
	eventually(t, "the 410 recorded as failed", func() bool {
		attempts, err := backend.FailedWebhooks(rt, exec.ID)
		return err == nil && slices.Equal(attempts, []int{1})
	})
	if n := pendingWebhooks(t, rt); n != 1 {
		t.Fatalf("%d pending, want 1 (the down receiver's)", n)
	}
	if _, err := backend.SweepExpired(rt, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n := pendingWebhooks(t, rt); n != 0 {
		t.Fatalf("%d pending after retention, want 0", n)
	}
	if attempts, err := backend.FailedWebhooks(rt, exec.ID); err != nil || len(attempts) != 0 {
		t.Fatalf("failed rows after retention: %v %v", attempts, err)
	}
}

// The run.failed that recovery commits for an execution the previous process left running is
// notified like any other event: the outbox is filled by the store, whatever path commits.
func TestWebhookNotifiesRecoveryFailure(t *testing.T) {
	rc, srv := newReceiver(t, nil)
	dir := t.TempDir()
	providers := []backend.Provider{&scripted{run: blockUntilCancelled}}
	cfg := webhook.Config{Subscriptions: []webhook.Subscription{{URL: srv.URL, Secret: webhookSecret}}}
	rt := openRuntime(t, dir, backend.Options{Providers: providers, Webhooks: notifier(t, cfg)})
	exec := startScripted(t, rt, newConversation(t, rt))
	waitForEvent(t, rt, exec.ID, api.StandardEventTypeRunStarted)
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(rc.delivered()); n != 0 {
		t.Fatalf("%d notifications before the restart, want none (nothing subscribed happened)", n)
	}
	openRuntime(t, dir, backend.Options{Providers: providers, Webhooks: notifier(t, cfg)})
	eventually(t, "the recovery's run.failed", func() bool { return len(rc.delivered()) == 1 })
	p := rc.delivered()[0].payload
	if p.Type != api.StandardEventTypeRunFailed || p.Data.Execution.ID != exec.ID || p.Data.Execution.State != api.ExecutionStateFailed {
		t.Fatalf("delivered %s of %s in state %s", p.Type, p.Data.Execution.ID, p.Data.Execution.State)
	}
}

// checkAgainstSchema validates a body against a schema of openapi/harness.yaml.
func checkAgainstSchema(t *testing.T, name string, body []byte) {
	t.Helper()
	doc, err := libopenapi.NewDocument(openapi.Document)
	if err != nil {
		t.Fatal(err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatal(err)
	}
	schema := model.Model.Components.Schemas.GetOrZero(name)
	if schema == nil {
		t.Fatalf("schema %s missing from harness.yaml", name)
	}
	if ok, errs := schema_validation.NewSchemaValidator().ValidateSchemaBytes(schema.Schema(), body); !ok {
		for _, e := range errs {
			t.Errorf("%s: %s", name, e.Error())
		}
		t.Fatalf("body does not match %s: %s", name, body)
	}
}

// webhookCounts is a webhook.Observer that counts the sender's hooks.
type webhookCounts struct {
	delivered, retried, failed atomic.Int64
}

func (c *webhookCounts) WebhookDelivered()          { c.delivered.Add(1) }
func (c *webhookCounts) WebhookRetried()            { c.retried.Add(1) }
func (c *webhookCounts) WebhookFailed()             { c.failed.Add(1) }
func (*webhookCounts) WebhookQueueOldest(time.Time) {}

// A subscription limited to tenants hears only their executions; one without a limit hears
// every tenant's (the operator's receiver).
func TestWebhookSubscriptionLimitedToTenants(t *testing.T) {
	aliceOnly, aliceSrv := newReceiver(t, nil)
	everyone, everyoneSrv := newReceiver(t, nil)
	rt := openRuntime(t, "", backend.Options{Webhooks: notifier(t, webhook.Config{Subscriptions: []webhook.Subscription{
		{URL: aliceSrv.URL, Secret: webhookSecret, Events: []string{"run.completed"}, Tenants: []string{"alice"}},
		{URL: everyoneSrv.URL, Secret: webhookSecret, Events: []string{"run.completed"}},
	}, Delivery: fastRetries})})
	run := func(tenant string) string {
		ctx := backend.WithTenant(ctxT(t), backend.Tenant{ID: tenant})
		c, err := rt.CreateConversation(ctx, nil)
		if err != nil {
			t.Fatalf("CreateConversation as %q: %v", tenant, err)
		}
		exec, _, err := rt.StartExecution(ctx, startReq(c.ID, startOpts{input: "x", config: api.JSONObject{"delayMs": 0}}))
		if err != nil {
			t.Fatalf("StartExecution as %q: %v", tenant, err)
		}
		for _, err := range backend.FollowExecution(ctx, rt, exec.ID, 0) {
			if err != nil {
				t.Fatalf("Follow: %v", err)
			}
		}
		return exec.ID
	}
	alice, bob, anonymous := run("alice"), run("bob"), run("")
	eventually(t, "three notifications to the unlimited receiver", func() bool { return len(everyone.delivered()) == 3 })
	eventually(t, "an empty outbox", func() bool { return pendingWebhooks(t, rt) == 0 })
	got := aliceOnly.delivered()
	if len(got) != 1 || got[0].payload.Data.Execution.ID != alice {
		var ids []string
		for _, d := range got {
			ids = append(ids, d.payload.Data.Execution.ID)
		}
		t.Fatalf("the receiver limited to alice got %v, want only alice's %s (bob's %s, anonymous %s must not reach it)", ids, alice, bob, anonymous)
	}
}
