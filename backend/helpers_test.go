package backend_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
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
	opts.Dir = dir
	if opts.Providers == nil {
		opts.Providers = []backend.Provider{mock.New()}
	}
	rt, err := backend.Open(opts)
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
	c, err := rt.CreateConversation(ctxT(t), api.JsonObject{"suite": "backend"})
	if err != nil {
		t.Fatalf("CreateConversation: %v", err)
	}
	return c.Id
}

type startOpts struct {
	provider     string
	input        string
	config       api.JsonObject
	capabilities []string
	key          string
}

func startReq(conv string, o startOpts) api.StartExecutionRequest {
	req := api.StartExecutionRequest{ConversationId: conv, ProviderId: o.provider, Input: o.input}
	if req.ProviderId == "" {
		req.ProviderId = mock.ID
	}
	if o.config != nil {
		cfg := o.config
		req.Config = &cfg
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
	for e, err := range rt.Follow(ctxT(t), id, after) {
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
	for e, err := range rt.Follow(ctxT(t), id, 0) {
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
