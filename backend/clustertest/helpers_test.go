// Package clustertest runs two runtimes (two nodes) over one real PostgreSQL database, in one
// process, and checks that any node answers any request for any execution exactly as one node
// does (issue 13). The database is a throw-away server (internal/pgtest).
package clustertest

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/cluster"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/postgres"
	"github.com/harness-edge/harness-edge/internal/pgtest"
	"github.com/harness-edge/harness-edge/sdk/api"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// testTimeout bounds every wait; a hang guard, not a performance assertion.
const testTimeout = 30 * time.Second

// testLease is short so that a node's death is noticed within a test, yet long enough that a
// busy CI machine does not delay a renewal past it.
const testLease = time.Second

// node is one runtime of the cluster under test.
type node struct {
	name string
	dsn  string // the database every node shares
	rt   *backend.Runtime
}

// cluster opens nodes named names over one fresh database. wrap, when set, wraps each node's
// store (fault injection).
type clusterOpts struct {
	providers func() []backend.Provider
	wrap      func(*postgres.Store) store.Store
	poll      time.Duration
	durable   bool         // a PostgreSQL server of its own with fsync and synchronous commit on (figures)
	log       *slog.Logger // the runtime's; nil discards
}

func startCluster(t testing.TB, o clusterOpts, names ...string) []*node {
	t.Helper()
	server := pgtest.Start
	if o.durable {
		server = func(tb testing.TB) *pgtest.Cluster { return pgtest.StartCluster(tb, pgtest.Options{Durable: true}) }
	}
	dsn := server(t).NewDatabase(t)
	nodes := make([]*node, len(names))
	for i, name := range names {
		nodes[i] = openNode(t, dsn, name, o)
	}
	return nodes
}

func openNode(t testing.TB, dsn, name string, o clusterOpts) *node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	st, err := postgres.Open(ctx, postgres.Config{DSN: dsn, Node: name})
	if err != nil {
		t.Fatalf("open the store of node %s: %v", name, err)
	}
	var s store.Store = st
	if o.wrap != nil {
		s = o.wrap(st)
	}
	providers := []backend.Provider{mock.New()}
	if o.providers != nil {
		providers = o.providers()
	}
	rt, err := backend.Open(backend.Options{
		Store:     s,
		Node:      name,
		Providers: providers,
		Logger:    o.log,
		// Through the wrapper, so that faults injected into the store reach leases and commands.
		Cluster: cluster.New(s.(store.Cluster), cluster.Options{Lease: testLease, Poll: o.poll}),
	})
	if err != nil {
		t.Fatalf("open node %s: %v", name, err)
	}
	t.Cleanup(func() { rt.Close() })
	return &node{name: name, dsn: dsn, rt: rt}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func newConversation(t testing.TB, n *node) string {
	t.Helper()
	c, err := n.rt.CreateConversation(ctxT(t), api.JSONObject{"suite": "cluster"})
	if err != nil {
		t.Fatalf("CreateConversation on %s: %v", n.name, err)
	}
	return c.ID
}

func start(t testing.TB, n *node, req api.StartExecutionRequest) api.Execution {
	t.Helper()
	exec, _, err := n.rt.StartExecution(ctxT(t), req)
	if err != nil {
		t.Fatalf("StartExecution on %s: %v", n.name, err)
	}
	return exec
}

func mockRequest(conv, input string, config api.JSONObject) api.StartExecutionRequest {
	return api.StartExecutionRequest{ConversationID: conv, ProviderID: mock.ID, Input: input, Config: config}
}

// follow collects every event of id on n from cursor after, until the terminal one.
func follow(t testing.TB, n *node, id string, after int64) []backend.Event {
	t.Helper()
	var out []backend.Event
	for e, err := range backend.FollowExecution(ctxT(t), n.rt, id, after) {
		if err != nil {
			t.Fatalf("Follow %s on %s: %v", id, n.name, err)
		}
		out = append(out, e)
	}
	return out
}

// waitForEvent follows id on n until an event of type typ and returns it.
func waitForEvent(t testing.TB, n *node, id string, typ api.StandardEventType) api.RuntimeEvent {
	t.Helper()
	for e, err := range backend.FollowExecution(ctxT(t), n.rt, id, 0) {
		if err != nil {
			t.Fatalf("Follow %s on %s: %v", id, n.name, err)
		}
		if e.Type == typ {
			re, err := e.Decode()
			if err != nil {
				t.Fatal(err)
			}
			return re
		}
	}
	t.Fatalf("%s ended on %s without %s", id, n.name, typ)
	return api.RuntimeEvent{}
}

// checkComplete fails unless events are sequences 1..n in order with exactly one terminal
// event, the last.
func checkComplete(t testing.TB, who string, events []backend.Event) {
	t.Helper()
	for i, e := range events {
		if e.Sequence != int64(i+1) {
			t.Fatalf("%s: event %d has sequence %d", who, i, e.Sequence)
		}
		if e.Terminal() != (i == len(events)-1) {
			t.Fatalf("%s: event %d (%s) terminal=%v in a log of %d", who, e.Sequence, e.Type, e.Terminal(), len(events))
		}
	}
	if len(events) == 0 {
		t.Fatalf("%s: no events", who)
	}
}

func sameLog(t testing.TB, who string, want, got []backend.Event) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: %d events, want %d", who, len(got), len(want))
	}
	for i := range want {
		if string(want[i].JSON) != string(got[i].JSON) {
			t.Fatalf("%s: event %d differs:\n got %s\nwant %s", who, i+1, got[i].JSON, want[i].JSON)
		}
	}
}

func wantCode(t testing.TB, err error, code backend.Code) {
	t.Helper()
	if got := backend.ErrorCode(err); got != code {
		t.Fatalf("error %v has code %q, want %q", err, got, code)
	}
}

func approvalAction(t testing.TB, n *node, id string) string {
	t.Helper()
	re := waitForEvent(t, n, id, api.StandardEventTypeActionRequired)
	req, err := re.Data.AsActionRequest()
	if err != nil {
		t.Fatalf("action.required data: %v", err)
	}
	return req.ID
}

func approve(v bool) func() (api.ActionResponse, error) {
	return func() (api.ActionResponse, error) { return api.ActionResponse{Approved: &v}, nil }
}

// blocker is a provider that emits one delta and then waits for its context; its cleanup hook
// counts its calls.
type blocker struct {
	cancels atomic.Int64
}

const blockerID = "blocker"

func (p *blocker) Manifest() api.ProviderManifest {
	m := mock.New().Manifest()
	m.ID, m.Name = blockerID, "Blocks until cancelled"
	return m
}

func (p *blocker) Run(ctx context.Context, run *backend.Run) (backend.Result, error) {
	if err := run.EmitText("waiting"); err != nil {
		return backend.Result{}, err
	}
	<-ctx.Done()
	return backend.Result{}, context.Cause(ctx)
}

func (p *blocker) Cancel(ctx context.Context, executionID, reason string) error {
	p.cancels.Add(1)
	return nil
}

// parallel runs fn(i) for i in [0, n) at once and returns when all returned.
func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	startLine := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-startLine
			fn(i)
		}()
	}
	close(startLine)
	wg.Wait()
}

func typesOf(events []backend.Event) string {
	s := ""
	for _, e := range events {
		s += fmt.Sprintf("%d:%s ", e.Sequence, e.Type)
	}
	return s
}
