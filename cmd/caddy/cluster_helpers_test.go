package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/harness-edge/harness-edge/internal/pgtest"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Helpers of the cluster tests (cluster_test.go): nodes and the load balancer as real Caddy
// processes, and an HTTP client that is safe to use from many goroutines (it returns errors
// instead of failing the test, which only the test's own goroutine may do).

const (
	clusterCaddyfile = "../../examples/cluster.Caddyfile"
	lbCaddyfile      = "../../examples/cluster-lb.Caddyfile"
	// nodeHeader names the node that answered (examples/cluster.Caddyfile sets it).
	nodeHeader = "X-Harness-Node"
)

// clusterNode is one Caddy process started from examples/cluster.Caddyfile.
type clusterNode struct {
	name string
	base string
	srv  *server
}

// startClusterNode starts a node named name on the database dsn; lease is its HARNESS_LEASE.
func startClusterNode(t *testing.T, bin string, as *syscall.Credential, dsn, name, lease string) *clusterNode {
	t.Helper()
	in := newExampleInstance(t, bin, as)
	in.plain("mock")
	in.env = append(in.env, "HARNESS_DATABASE_URL="+dsn, "HARNESS_NODE="+name, "HARNESS_LEASE="+lease)
	srv, _ := in.start(clusterCaddyfile)
	return &clusterNode{name: name, base: in.base, srv: srv}
}

// startLoadBalancer starts examples/cluster-lb.Caddyfile in front of nodes a and b and returns
// its base URL.
func startLoadBalancer(t *testing.T, bin string, as *syscall.Credential, a, b *clusterNode) (string, *server) {
	t.Helper()
	in := newExampleInstance(t, bin, as)
	in.plain() // the balancer has no provider of its own: GET /v1/runtime is a node's answer
	in.providers = []string{"mock"}
	in.env = append(in.env,
		"HARNESS_NODE_A="+strings.TrimPrefix(a.base, "http://"),
		"HARNESS_NODE_B="+strings.TrimPrefix(b.base, "http://"))
	srv, _ := in.start(lbCaddyfile)
	return in.base, srv
}

// clusterDatabase is the DSN of an empty database on a throw-away PostgreSQL server of t's own
// (internal/pgtest: PostgreSQL 15 run as an unprivileged user on a free port, removed when t
// ends). Without PostgreSQL it skips with what to install, and fails under CI=true. (A server
// of t's own rather than pgtest's shared one: the shared one needs pgtest.Main as TestMain,
// and this package's TestMain removes the built binaries.)
func clusterDatabase(t *testing.T) string {
	t.Helper()
	return pgtest.StartCluster(t, pgtest.Options{}).NewDatabase(t)
}

// buildHarnessctl builds cmd/harnessctl next to the caddy binary (with -race under -race).
func buildHarnessctl(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(filepath.Dir(buildCaddy(t)), "harnessctl")
	harnessctlBuild.Do(func() {
		args := []string{"build", "-o", bin}
		if raceEnabled {
			args = append(args, "-race")
		}
		if out, err := exec.Command("go", append(args, "../harnessctl")...).CombinedOutput(); err != nil {
			harnessctlBuildErr = fmt.Errorf("go build ../harnessctl: %v\n%s", err, out)
		}
	})
	if harnessctlBuildErr != nil {
		t.Fatal(harnessctlBuildErr)
	}
	return bin
}

// answer is one HTTP exchange: status, headers, body, and the node that answered.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) node() string { return a.header.Get(nodeHeader) }

// problemCode is the code of a Problem body ("" if the body is not one).
func (a answer) problemCode() string {
	var p api.Problem
	_ = json.Unmarshal(a.body, &p)
	return p.Code
}

func (a answer) execution() (api.Execution, error) {
	var x api.Execution
	err := json.Unmarshal(a.body, &x)
	return x, err
}

// call sends one JSON request; it never fails the test (use it from any goroutine).
func call(ctx context.Context, method, url string, body any) (answer, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return answer{}, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return answer{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: raw}, err
}

// must is call that fails the test unless the status is want (the test's goroutine only).
func must(t *testing.T, method, url string, body any, want int) answer {
	t.Helper()
	a, err := call(t.Context(), method, url, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	if a.status != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, url, a.status, want, a.body)
	}
	return a
}

// startExecution starts a mock execution in a new conversation at base.
func startExecution(t *testing.T, base string, input string, config map[string]any) (api.Execution, answer) {
	t.Helper()
	conv := decode(t, must(t, http.MethodPost, base+"/v1/conversations", map[string]any{}, http.StatusCreated).body)
	a := must(t, http.MethodPost, base+"/v1/executions", map[string]any{
		"conversationId": conv["id"], "providerId": "mock", "input": input, "config": config,
	}, http.StatusAccepted)
	x, err := a.execution()
	if err != nil {
		t.Fatal(err)
	}
	return x, a
}

// sseStream is an open event stream, read with go-sse.
type sseStream struct {
	node   string // the node that answered
	events chan streamed
}

// streamed is one event as it arrived (or the error that ended the stream).
type streamed struct {
	event api.RuntimeEvent
	raw   string // the SSE data, byte for byte
	err   error
}

// openEvents opens GET /v1/executions/{id}/events as text/event-stream and reads it on a
// goroutine of its own into the stream's channel, which is closed when the stream ends. The
// SSE id and event fields are checked against the event they carry.
func openEvents(ctx context.Context, base, id string) (*sseStream, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/executions/"+id+"/events", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("event stream of %s: status %d, content type %q: %s", id, resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	s := &sseStream{node: resp.Header.Get(nodeHeader), events: make(chan streamed, 64)}
	go func() {
		defer close(s.events)
		defer resp.Body.Close()
		for msg, err := range sse.Read(resp.Body, &sse.ReadConfig{MaxEventSize: 4 << 20}) {
			if err != nil {
				if ctx.Err() == nil {
					s.events <- streamed{err: err}
				}
				return
			}
			var ev api.RuntimeEvent
			if err := json.Unmarshal([]byte(msg.Data), &ev); err != nil {
				s.events <- streamed{err: fmt.Errorf("decoding event %q: %w", msg.Data, err)}
				return
			}
			if msg.LastEventID != strconv.FormatInt(ev.Sequence, 10) || msg.Type != string(ev.Type) {
				s.events <- streamed{err: fmt.Errorf("SSE id=%q event=%q do not match the event %s #%d", msg.LastEventID, msg.Type, ev.Type, ev.Sequence)}
				return
			}
			select {
			case s.events <- streamed{event: ev, raw: msg.Data}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return s, nil
}

// until reads events up to and including the first of type typ; the events read are returned.
// It fails when the stream ends or errs first, or after bound (a guard against a hang only).
func (s *sseStream) until(t *testing.T, typ api.StandardEventType, bound time.Duration) []streamed {
	t.Helper()
	var got []streamed
	timeout := time.After(bound)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatalf("the stream (node %s) ended before a %s event; got %v", s.node, typ, streamedTypes(got))
			}
			if ev.err != nil {
				t.Fatalf("the stream (node %s): %v", s.node, ev.err)
			}
			got = append(got, ev)
			if ev.event.Type == typ {
				return got
			}
		case <-timeout:
			t.Fatalf("no %s event on the stream (node %s) within %s; got %v", typ, s.node, bound, streamedTypes(got))
		}
	}
}

// rest reads the stream to its end (the server ends it after the terminal event).
func (s *sseStream) rest(t *testing.T, bound time.Duration) []streamed {
	t.Helper()
	var got []streamed
	timeout := time.After(bound)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return got
			}
			if ev.err != nil {
				t.Fatalf("the stream (node %s): %v", s.node, ev.err)
			}
			got = append(got, ev)
		case <-timeout:
			t.Fatalf("the stream (node %s) did not end within %s; got %v", s.node, bound, streamedTypes(got))
		}
	}
}

func streamedTypes(evs []streamed) []api.StandardEventType {
	var out []api.StandardEventType
	for _, ev := range evs {
		out = append(out, ev.event.Type)
	}
	return out
}

// replay is the execution's JSON replay (GET …/events) from base.
func replay(t *testing.T, base, id string) (api.EventList, answer) {
	t.Helper()
	a := must(t, http.MethodGet, base+"/v1/executions/"+id+"/events", nil, http.StatusOK)
	var list api.EventList
	if err := json.Unmarshal(a.body, &list); err != nil {
		t.Fatal(err)
	}
	return list, a
}

// countType counts the events of one type.
func countType(events []api.RuntimeEvent, typ api.StandardEventType) int {
	return len(slices.DeleteFunc(slices.Clone(events), func(ev api.RuntimeEvent) bool { return ev.Type != typ }))
}

// contiguous reports whether the events' sequences are 1, 2, …, n.
func contiguous(events []api.RuntimeEvent) bool {
	for i, ev := range events {
		if ev.Sequence != int64(i+1) {
			return false
		}
	}
	return true
}

// actionID is the id of the action an action.required event asks for.
func actionID(t *testing.T, ev api.RuntimeEvent) string {
	t.Helper()
	action, err := ev.Data.AsActionRequest()
	if err != nil || action.ID == "" {
		t.Fatalf("action.required without an action id: %v %+v", err, ev)
	}
	return action.ID
}

var (
	harnessctlBuild    sync.Once
	harnessctlBuildErr error
)
