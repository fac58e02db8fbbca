package backend_test

import (
	"sync"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

func TestIdempotentReuseAndConflict(t *testing.T) {
	dir := t.TempDir()
	rt := openRuntime(t, dir, optsNone())
	conv := newConversation(t, rt)
	first, replayed, err := rt.StartExecution(ctxT(t), startReq(conv, startOpts{input: "hello", key: "k1",
		config: api.JSONObject{"a": 1, "b": map[string]any{"y": []any{1, 2}, "x": true}}, capabilities: []string{"event.replay", "action.approval"}}))
	if err != nil || replayed {
		t.Fatalf("first start: %v replayed=%v", err, replayed)
	}
	finalOf(t, rt, first.ID)

	// Equivalent: key order, 1 ≡ 1.0, capability order and duplicates.
	same, replayed, err := rt.StartExecution(ctxT(t), startReq(conv, startOpts{input: "hello", key: "k1",
		config: api.JSONObject{"b": map[string]any{"x": true, "y": []any{1.0, 2}}, "a": 1.0}, capabilities: []string{"action.approval", "event.replay", "action.approval"}}))
	if err != nil || !replayed || same.ID != first.ID || same.State != api.ExecutionStateSucceeded {
		t.Fatalf("replay: %v replayed=%v id %s state %s", err, replayed, same.ID, same.State)
	}
	events, _, _ := rt.ListEvents(ctxT(t), first.ID, 0, 0)
	if len(events) != 6 {
		t.Fatalf("a replay must not add events or runs: %d events", len(events))
	}

	conflicts := []startOpts{
		{input: "hello (conflicting request)", key: "k1", config: api.JSONObject{"a": 1, "b": map[string]any{"y": []any{1, 2}, "x": true}}, capabilities: []string{"event.replay", "action.approval"}},
		{input: "hello", key: "k1", config: api.JSONObject{"a": 1, "b": map[string]any{"y": []any{2, 1}, "x": true}}, capabilities: []string{"event.replay", "action.approval"}}, // array order matters
		{input: "hello", key: "k1", config: api.JSONObject{"a": 1, "b": map[string]any{"y": []any{1, 2}, "x": true}}},
	}
	for _, o := range conflicts {
		_, _, err := rt.StartExecution(ctxT(t), startReq(conv, o))
		wantCode(t, err, backend.CodeIdempotencyConflict, "Idempotency key was already used with a different execution request")
	}

	// Scope is the conversation; absent config ≡ {}; absent capabilities ≡ [].
	other := newConversation(t, rt)
	a := start(t, rt, other, startOpts{input: "hello", key: "k1"})
	b, replayed, err := rt.StartExecution(ctxT(t), startReq(other, startOpts{input: "hello", key: "k1", config: api.JSONObject{}, capabilities: []string{}}))
	if err != nil || !replayed || a.ID != b.ID || a.ID == first.ID {
		t.Fatalf("per-conversation scope: %v %v %s %s", err, replayed, a.ID, b.ID)
	}

	// A request that failed before the idempotency step did not register its key.
	_, _, err = rt.StartExecution(ctxT(t), startReq(conv, startOpts{input: "x", key: "k2", capabilities: []string{"extension.sandbox"}}))
	wantCode(t, err, backend.CodeCapabilityUnsupported, "")
	if _, replayed, err := rt.StartExecution(ctxT(t), startReq(conv, startOpts{input: "y", key: "k2"})); err != nil || replayed {
		t.Fatalf("key after 422: %v replayed=%v", err, replayed)
	}

	// Records are durable.
	rt.Close()
	rt2 := openRuntime(t, dir, optsNone())
	again, replayed, err := rt2.StartExecution(ctxT(t), startReq(conv, startOpts{input: "hello", key: "k1", config: api.JSONObject{"a": 1, "b": map[string]any{"x": true, "y": []any{1, 2}}}, capabilities: []string{"event.replay", "action.approval"}}))
	if err != nil || !replayed || again.ID != first.ID {
		t.Fatalf("after reopen: %v %v %s", err, replayed, again.ID)
	}
}

func TestFiftyConcurrentIdempotentStartsMakeOneExecution(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	conv := newConversation(t, rt)
	const n = 50
	ids := make([]string, n)
	replays := make([]bool, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	startLine := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-startLine
			exec, replayed, err := rt.StartExecution(ctxT(t), startReq(conv, startOpts{input: "same", key: "concurrent", config: api.JSONObject{"delayMs": 0}}))
			ids[i], replays[i], errs[i] = exec.ID, replayed, err
		})
	}
	close(startLine)
	wg.Wait()
	created := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("start %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("two executions: %s and %s", ids[0], ids[i])
		}
		if !replays[i] {
			created++
		}
	}
	if created != 1 {
		t.Fatalf("%d starts reported a creation, want 1", created)
	}
	events, final := finalOf(t, rt, ids[0])
	checkLog(t, final, events)
}

func TestCanonicalJSON(t *testing.T) {
	cases := []struct {
		in   any
		want string
	}{
		{map[string]any{"b": 1.0, "a": []any{true, nil, "x"}}, `{"a":[true,null,"x"],"b":1}`},
		{1e21, `1e+21`},
		{1e20, `100000000000000000000`},
		{1.5e-7, `1.5e-7`},
		{0.000001, `0.000001`},
		{-0.0, `0`},
		{123.456, `123.456`},
		{"\u2028\"\\\n\x01é", "\"\u2028\\\"\\\\\\n\\u0001é\""},
		{map[string]any{"é": 1.0, "z": 2.0, "A": 3.0}, `{"A":3,"z":2,"é":1}`},
	}
	for _, c := range cases {
		got, err := backend.CanonicalJSON(c.in)
		if err != nil || got != c.want {
			t.Errorf("CanonicalJSON(%#v) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	one, _ := backend.Fingerprint("c", "p", "i", []string{"a"}, api.JSONObject{"n": 1.0}, "")
	oneAgain, _ := backend.Fingerprint("c", "p", "i", []string{"a"}, api.JSONObject{"n": 1.0}, "")
	other, _ := backend.Fingerprint("c", "p", "i", []string{"a"}, api.JSONObject{"n": 1.5}, "")
	if one != oneAgain || one == other || len(one) != 64 {
		t.Fatalf("fingerprints %s %s %s", one, oneAgain, other)
	}
}
