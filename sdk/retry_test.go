package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// fastRetry keeps the tests' waits tiny.
var fastRetry = RetryPolicy{MaxAttempts: 4, MinWait: time.Millisecond, MaxWait: 5 * time.Millisecond, MaxRetryAfter: 10 * time.Millisecond}

func TestBackoffIsJitteredExponentialAndCapped(t *testing.T) {
	p := RetryPolicy{MinWait: 100 * time.Millisecond, MaxWait: time.Second, MaxRetryAfter: 2 * time.Second}
	for _, tc := range []struct {
		attempt  int
		base     time.Duration
		whatever string
	}{
		{0, 100 * time.Millisecond, "first retry"},
		{3, 800 * time.Millisecond, "grows by 2"},
		{4, time.Second, "capped at MaxWait"},
		{200, time.Second, "no overflow"},
	} {
		for range 50 {
			got := p.backoff(tc.attempt, nil)
			if got < tc.base*3/4 || got > tc.base {
				t.Fatalf("%s: backoff(%d) = %v, want within [%v, %v]", tc.whatever, tc.attempt, got, tc.base*3/4, tc.base)
			}
		}
	}
}

func TestBackoffHonoursRetryAfterWithinTheCap(t *testing.T) {
	p := RetryPolicy{MinWait: 100 * time.Millisecond, MaxWait: time.Second, MaxRetryAfter: 2 * time.Second}
	resp := func(status int, retryAfter string) *http.Response {
		h := http.Header{}
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		return &http.Response{StatusCode: status, Header: h}
	}
	for _, tc := range []struct {
		name string
		resp *http.Response
		want time.Duration
	}{
		{"seconds", resp(429, "1"), time.Second},
		{"zero", resp(503, "0"), 0},
		{"clamped", resp(503, "3600"), 2 * time.Second},
		{"date, clamped", resp(429, time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)), 2 * time.Second},
		{"date in the past", resp(429, time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)), 0},
	} {
		if got := p.backoff(5, tc.resp); got != tc.want {
			t.Errorf("%s: backoff = %v, want %v", tc.name, got, tc.want)
		}
	}
	// Without a usable Retry-After (or on a status that does not define it) the backoff applies.
	for _, r := range []*http.Response{resp(429, ""), resp(429, "soon"), resp(500, "1"), nil} {
		if got := p.backoff(0, r); got < 75*time.Millisecond || got > 100*time.Millisecond {
			t.Errorf("backoff without a hint = %v", got)
		}
	}
}

func TestCheckRetry(t *testing.T) {
	ctx := context.Background()
	unprocessed := withRetryMode(ctx, retryUnprocessed)
	status := func(code int) *http.Response { return &http.Response{StatusCode: code, Header: http.Header{}} }
	dialErr := &url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}}
	resetErr := &url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}}
	cut := func(code int) error { return &cutAnswerError{status: code, read: 10, err: io.ErrUnexpectedEOF} }
	stalled := &url.Error{Op: "Post", URL: "http://x", Err: &stallError{after: time.Second}}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		resp *http.Response
		err  error
		want bool
	}{
		{"408", ctx, status(408), nil, true},
		{"429", ctx, status(429), nil, true},
		{"500", ctx, status(500), nil, true},
		{"501", ctx, status(501), nil, false},
		{"503", ctx, status(503), nil, true},
		{"404", ctx, status(404), nil, false},
		{"409", ctx, status(409), nil, false},
		{"reset", ctx, nil, resetErr, true},
		{"dial", ctx, nil, dialErr, true},
		{"unprocessed 503", unprocessed, status(503), nil, true},
		{"unprocessed 429", unprocessed, status(429), nil, true},
		{"unprocessed 408", unprocessed, status(408), nil, true},
		{"unprocessed 500", unprocessed, status(500), nil, false},
		{"unprocessed 502", unprocessed, status(502), nil, false},
		{"unprocessed dial", unprocessed, nil, dialErr, true},
		{"unprocessed reset", unprocessed, nil, resetErr, false},
		{"cut 200", ctx, status(200), cut(200), true},
		{"cut 404", ctx, status(404), cut(404), true},
		{"unprocessed cut 201", unprocessed, status(201), cut(201), true},
		{"unprocessed cut 503", unprocessed, status(503), cut(503), true},
		{"unprocessed cut 500", unprocessed, status(500), cut(500), false},
		{"unprocessed cut 400", unprocessed, status(400), cut(400), false},
		{"stalled", ctx, nil, stalled, true},
		{"unprocessed stalled", unprocessed, nil, stalled, false},
	} {
		got, err := checkRetry(tc.ctx, tc.resp, tc.err)
		if got != tc.want || err != nil {
			t.Errorf("%s: checkRetry = %v, %v; want %v, nil", tc.name, got, err, tc.want)
		}
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if retry, err := checkRetry(done, status(503), nil); retry || err != nil {
		t.Errorf("ended ctx with a response: %v, %v; want the response handed over", retry, err)
	}
	if retry, err := checkRetry(done, nil, resetErr); retry || !errors.Is(err, context.Canceled) {
		t.Errorf("ended ctx without a response: %v, %v", retry, err)
	}
}

func TestSilentByDefault(t *testing.T) {
	c, err := New("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	rc := c.http.Transport.(*retryingTransport).client
	if rc.Logger != nil {
		t.Fatalf("retryablehttp logger = %#v; it would print every attempt to stderr", rc.Logger)
	}
}

// recorder is a test server that answers from a script and records what it received.
type recorder struct {
	mu     sync.Mutex
	bodies []map[string]any
	paths  []string
}

func (r *recorder) record(req *http.Request) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var body map[string]any
	raw, _ := io.ReadAll(req.Body)
	_ = json.Unmarshal(raw, &body)
	r.bodies = append(r.bodies, body)
	r.paths = append(r.paths, req.Method+" "+req.URL.Path)
	return len(r.bodies)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func unavailable(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "0")
	writeJSON(w, http.StatusServiceUnavailable, map[string]string{"code": "INTERNAL_ERROR", "message": "try later"})
}

func TestStartExecutionRetriesWithOneGeneratedKey(t *testing.T) {
	var rec recorder
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rec.record(r) < 3 {
			unavailable(w)
			return
		}
		writeJSON(w, http.StatusAccepted, api.Execution{ID: "exec_1", State: api.ExecutionStateQueued})
	}))
	defer srv.Close()
	c, _ := New(srv.URL, WithRetry(fastRetry))
	exec, err := c.StartExecution(context.Background(), api.StartExecutionRequest{ConversationID: "conv_1", ProviderID: "mock"})
	if err != nil || exec.ID != "exec_1" {
		t.Fatalf("StartExecution = %+v, %v", exec, err)
	}
	if len(rec.bodies) != 3 {
		t.Fatalf("%d attempts, want 3", len(rec.bodies))
	}
	key, _ := rec.bodies[0]["idempotencyKey"].(string)
	if key == "" {
		t.Fatal("no idempotency key generated")
	}
	for i, b := range rec.bodies {
		if b["idempotencyKey"] != key {
			t.Fatalf("attempt %d carried key %v, want %q", i, b["idempotencyKey"], key)
		}
	}

	// The next call gets a new key; a caller's key is sent as is.
	_, _ = c.StartExecution(context.Background(), api.StartExecutionRequest{ConversationID: "conv_1", ProviderID: "mock"})
	if rec.bodies[3]["idempotencyKey"] == key {
		t.Fatal("a second call reused the first call's key")
	}
	_, _ = c.StartExecution(context.Background(), api.StartExecutionRequest{ConversationID: "conv_1", ProviderID: "mock", IdempotencyKey: ptr("mine")})
	if rec.bodies[4]["idempotencyKey"] != "mine" {
		t.Fatalf("caller's key replaced: %v", rec.bodies[4]["idempotencyKey"])
	}
}

func TestRetriesEndWithTheLastAnswerDecoded(t *testing.T) {
	var rec recorder
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.record(r)
		w.Header().Set("X-Request-Id", "last")
		unavailable(w)
	}))
	defer srv.Close()
	c, _ := New(srv.URL, WithRetry(fastRetry))
	_, err := c.GetExecution(context.Background(), "exec_1")
	var e *Error
	if !errors.As(err, &e) || e.StatusCode != 503 || e.Message != "try later" || e.RequestID != "last" {
		t.Fatalf("err = %v", err)
	}
	if len(rec.bodies) != fastRetry.MaxAttempts {
		t.Fatalf("%d attempts, want %d", len(rec.bodies), fastRetry.MaxAttempts)
	}
}

func TestCreateConversationIsNotRetriedAfterAmbiguousFailure(t *testing.T) {
	var rec recorder
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch rec.record(r) {
		case 1:
			unavailable(w) // certainly not processed: retried
		default:
			writeJSON(w, http.StatusInternalServerError, map[string]string{"code": "INTERNAL_ERROR", "message": "Unexpected server error"})
		}
	}))
	defer srv.Close()
	c, _ := New(srv.URL, WithRetry(fastRetry))
	_, err := c.CreateConversation(context.Background(), api.CreateConversationRequest{})
	if !errors.Is(err, ErrInternal) {
		t.Fatalf("err = %v", err)
	}
	if len(rec.bodies) != 2 {
		t.Fatalf("%d attempts, want 2 (503 retried, 500 returned)", len(rec.bodies))
	}
}

// respondServer applies the first respond and loses its answer (the connection is closed), then
// answers ACTION_ALREADY_RESOLVED, as the real server does for a repeat.
func respondServer(t *testing.T, loseFirstAnswer bool) (*httptest.Server, *recorder) {
	rec := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := rec.record(r)
		switch {
		case r.Method == http.MethodGet:
			writeJSON(w, http.StatusOK, api.Execution{ID: "exec_1", State: api.ExecutionStateRunning})
		case n == 1 && loseFirstAnswer:
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			_ = conn.Close()
		default:
			writeJSON(w, http.StatusConflict, map[string]string{"code": "ACTION_ALREADY_RESOLVED", "message": "Action already resolved: action_1"})
		}
	}))
	return srv, rec
}

func TestRespondRetryThatFindsItsOwnAnswerSucceeds(t *testing.T) {
	srv, rec := respondServer(t, true)
	defer srv.Close()
	c, _ := New(srv.URL, WithRetry(fastRetry))
	exec, err := c.RespondToAction(context.Background(), "exec_1", "action_1", api.ActionResponse{Approved: ptr(true)})
	if err != nil || exec.State != api.ExecutionStateRunning {
		t.Fatalf("RespondToAction = %+v, %v", exec, err)
	}
	want := []string{"POST /v1/executions/exec_1/actions/action_1:respond", "POST /v1/executions/exec_1/actions/action_1:respond", "GET /v1/executions/exec_1"}
	if len(rec.paths) != 3 || rec.paths[0] != want[0] || rec.paths[1] != want[1] || rec.paths[2] != want[2] {
		t.Fatalf("requests = %q, want %q", rec.paths, want)
	}
}

func TestRespondWithoutRetryReportsAlreadyResolved(t *testing.T) {
	srv, _ := respondServer(t, false)
	defer srv.Close()
	c, _ := New(srv.URL, WithRetry(fastRetry))
	_, err := c.RespondToAction(context.Background(), "exec_1", "action_1", api.ActionResponse{Approved: ptr(true)})
	if !errors.Is(err, ErrActionAlreadyResolved) {
		t.Fatalf("err = %v", err)
	}
}

func TestContextBoundsRetryAfter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	c, _ := New(srv.URL, WithRetry(RetryPolicy{MaxRetryAfter: time.Hour}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := c.Health(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's deadline", err)
	}
}
