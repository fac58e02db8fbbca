package backend_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// testTimeout bounds every wait in these tests; it is a hang guard, not a performance assertion.
const testTimeout = 30 * time.Second

func openRuntime(t testing.TB, dir string, opts backend.Options) *backend.Runtime {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	if opts.Providers == nil {
		opts.Providers = []backend.Provider{mock.New()}
	}
	rt, err := local.Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func newConversation(t testing.TB, rt *backend.Runtime) string {
	t.Helper()
	c, err := rt.CreateConversation(ctxT(t), api.JSONObject{"suite": "backend"})
	if err != nil {
		t.Fatalf("CreateConversation: %v", err)
	}
	return c.ID
}

type startOpts struct {
	provider     string
	input        string
	config       api.JSONObject
	capabilities []string
	key          string
}

func startReq(conv string, o startOpts) api.StartExecutionRequest {
	req := api.StartExecutionRequest{ConversationID: conv, ProviderID: o.provider, Input: o.input}
	if req.ProviderID == "" {
		req.ProviderID = mock.ID
	}
	if o.config != nil {
		cfg := o.config
		req.Config = cfg
	}
	if o.capabilities != nil {
		caps := o.capabilities
		req.RequiredCapabilities = &caps
	}
	if o.key != "" {
		key := o.key
		req.IdempotencyKey = &key
	}
	return req
}

func start(t testing.TB, rt *backend.Runtime, conv string, o startOpts) api.Execution {
	t.Helper()
	exec, _, err := rt.StartExecution(ctxT(t), startReq(conv, o))
	if err != nil {
		t.Fatalf("StartExecution: %v", err)
	}
	return exec
}

// collect follows the execution to its terminal event and decodes every event.
func collect(t testing.TB, rt *backend.Runtime, id string, after int64) []api.RuntimeEvent {
	t.Helper()
	var out []api.RuntimeEvent
	for e, err := range backend.FollowExecution(ctxT(t), rt, id, after) {
		if err != nil {
			t.Fatalf("Follow %s: %v", id, err)
		}
		out = append(out, decode(t, e))
	}
	return out
}

func decode(t testing.TB, e backend.Event) api.RuntimeEvent {
	t.Helper()
	re, err := e.Decode()
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if re.Sequence != e.Sequence || re.Type != e.Type {
		t.Fatalf("event index %d/%s disagrees with its JSON %s", e.Sequence, e.Type, e.JSON)
	}
	return re
}

func types(events []api.RuntimeEvent) []api.StandardEventType {
	out := make([]api.StandardEventType, len(events))
	for i, e := range events {
		out[i] = e.Type
	}
	return out
}

func wantCode(t testing.TB, err error, code backend.Code, message string) *backend.Error {
	t.Helper()
	var e *backend.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T): want *backend.Error %s", err, err, code)
	}
	if e.Code != code {
		t.Fatalf("code %s (%q), want %s", e.Code, e.Message, code)
	}
	if message != "" && e.Message != message {
		t.Fatalf("message %q, want %q", e.Message, message)
	}
	return e
}

func getExecution(t testing.TB, rt *backend.Runtime, id string) api.Execution {
	t.Helper()
	exec, err := rt.GetExecution(ctxT(t), id)
	if err != nil {
		t.Fatalf("GetExecution: %v", err)
	}
	return exec
}

// waitForEvent follows until an event of type typ and returns it.
func waitForEvent(t testing.TB, rt *backend.Runtime, id string, typ api.StandardEventType) api.RuntimeEvent {
	t.Helper()
	for e, err := range backend.FollowExecution(ctxT(t), rt, id, 0) {
		if err != nil {
			t.Fatalf("Follow: %v", err)
		}
		if e.Type == typ {
			return decode(t, e)
		}
	}
	t.Fatalf("execution %s ended without %s", id, typ)
	return api.RuntimeEvent{}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func optsNone() backend.Options { return backend.Options{} }

// scripted is a provider whose behaviour is a test's function; cancel, when set, makes it a
// backend.Canceler (see withCancel).
type scripted struct {
	id  string
	run func(ctx context.Context, run *backend.Run) (backend.Result, error)
}

func (p *scripted) Manifest() api.ProviderManifest {
	id := p.id
	if id == "" {
		id = "scripted"
	}
	return api.ProviderManifest{
		ID: id, Name: "Scripted Test Provider", Version: "0.0.1",
		ProtocolVersion: api.ProviderManifestProtocolVersionN20260902,
		Topologies:      []api.RuntimeTopology{api.RuntimeTopologyEmbedded},
		Capabilities: map[string]api.SupportLevel{
			"action.approval": api.SupportLevelNative, "execution.cancel": api.SupportLevelNative,
			"artifact.list": api.SupportLevelEmulated, "action.input": api.SupportLevelNative,
		},
	}
}

func (p *scripted) Run(ctx context.Context, run *backend.Run) (backend.Result, error) {
	return p.run(ctx, run)
}

// cancelable is a scripted provider with a cleanup hook that counts its calls.
type cancelable struct {
	scripted
	calls  atomic.Int32
	cancel func(ctx context.Context, executionID, reason string) error
}

func (p *cancelable) Cancel(ctx context.Context, executionID, reason string) error {
	p.calls.Add(1)
	if p.cancel == nil {
		return nil
	}
	return p.cancel(ctx, executionID, reason)
}

// blockUntilCancelled is a Run that waits for its context and returns the abort.
func blockUntilCancelled(ctx context.Context, _ *backend.Run) (backend.Result, error) {
	<-ctx.Done()
	return backend.Result{}, context.Cause(ctx)
}

func scriptedRuntime(t testing.TB, opts backend.Options, p backend.Provider) *backend.Runtime {
	t.Helper()
	opts.Providers = []backend.Provider{p}
	return openRuntime(t, "", opts)
}

func startScripted(t testing.TB, rt *backend.Runtime, conv string) api.Execution {
	t.Helper()
	return start(t, rt, conv, startOpts{provider: rt.Capabilities()[0].ID, input: "x"})
}

// finalOf follows to the end and returns the events and the final execution.
func finalOf(t testing.TB, rt *backend.Runtime, id string) ([]api.RuntimeEvent, api.Execution) {
	t.Helper()
	events := collect(t, rt, id, 0)
	return events, getExecution(t, rt, id)
}

// checkLog asserts the invariants every finished log has: contiguous sequences from 1, ids
// "<exec>:<seq>", exactly one terminal event and it is last, matching the state.
func checkLog(t testing.TB, exec api.Execution, events []api.RuntimeEvent) {
	t.Helper()
	terminals := 0
	for i, e := range events {
		if e.Sequence != int64(i+1) || e.ID != fmt.Sprintf("%s:%d", exec.ID, i+1) || e.ExecutionID != exec.ID {
			t.Fatalf("event %d: sequence %d id %s", i+1, e.Sequence, e.ID)
		}
		if (backend.Event{Type: e.Type}).Terminal() {
			terminals++
		}
	}
	if terminals != 1 {
		t.Fatalf("%d terminal events in %v", terminals, types(events))
	}
	want := map[api.ExecutionState]api.StandardEventType{
		api.ExecutionStateSucceeded: api.StandardEventTypeRunCompleted,
		api.ExecutionStateFailed:    api.StandardEventTypeRunFailed,
		api.ExecutionStateCancelled: api.StandardEventTypeRunCancelled,
	}[exec.State]
	if last := events[len(events)-1].Type; last != want {
		t.Fatalf("state %s but last event %s (%v)", exec.State, last, types(events))
	}
}

// wantFailed asserts a failed execution with message and a valid log.
func wantFailed(t testing.TB, rt *backend.Runtime, id, message string) []api.RuntimeEvent {
	t.Helper()
	events, exec := finalOf(t, rt, id)
	checkLog(t, exec, events)
	if exec.State != api.ExecutionStateFailed || exec.Error == nil || exec.Error.Code != "PROVIDER_ERROR" || exec.Error.Message != message {
		t.Fatalf("execution %s error %+v, want failed %q", exec.State, exec.Error, message)
	}
	last := events[len(events)-1]
	if typed(last.Data.AsRunFailedData()).Code != "PROVIDER_ERROR" || typed(last.Data.AsRunFailedData()).Message != message {
		t.Fatalf("run.failed data %v", last.Data)
	}
	return events
}
