package backend_test

import (
	"context"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/sdk/api"
)

func TestCapabilityPreflight(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	conv := newConversation(t, rt)
	_, _, err := rt.StartExecution(ctxT(t), startReq(conv, startOpts{input: "x",
		capabilities: []string{"toString", "extension.sandbox", "action.approval", "constructor", "extension.sandbox"}}))
	e := wantCode(t, err, backend.CodeCapabilityUnsupported, "Provider mock does not support required capabilities")
	if got := jsonString(e.Details); got != `{"capabilities":["constructor","extension.sandbox","toString"],"providerId":"mock"}` {
		t.Fatalf("details %s", got)
	}
	if p := e.Problem(); p.Details == nil || p.Code != "CAPABILITY_UNSUPPORTED" {
		t.Fatalf("problem %+v", p)
	}

	// Declared unsupported fails too; emulated and degraded pass; the echo is sorted and unique.
	p := &scripted{id: "levels", run: func(context.Context, *backend.Run) (backend.Result, error) { return backend.Result{}, nil }}
	rt2 := scriptedRuntime(t, backend.Options{}, levelsProvider{p})
	conv2 := newConversation(t, rt2)
	_, _, err = rt2.StartExecution(ctxT(t), startReq(conv2, startOpts{provider: "levels", capabilities: []string{"off"}}))
	wantCode(t, err, backend.CodeCapabilityUnsupported, "")
	exec := start(t, rt2, conv2, startOpts{provider: "levels", capabilities: []string{"meh", "emu", "emu"}})
	if jsonString(exec.RequiredCapabilities) != `["emu","meh"]` {
		t.Fatalf("echo %v", exec.RequiredCapabilities)
	}
}

type levelsProvider struct{ *scripted }

func (l levelsProvider) Manifest() api.ProviderManifest {
	m := l.scripted.Manifest()
	m.Capabilities = map[string]api.SupportLevel{"off": api.SupportLevelUnsupported, "emu": api.SupportLevelEmulated, "meh": api.SupportLevelDegraded}
	return m
}

func TestStartExecutionNotFoundChecksInOrder(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	_, _, err := rt.StartExecution(ctxT(t), startReq("conv_missing", startOpts{provider: "nope", capabilities: []string{"toString"}}))
	wantCode(t, err, backend.CodeNotFound, "Conversation not found: conv_missing")
	conv := newConversation(t, rt)
	_, _, err = rt.StartExecution(ctxT(t), startReq(conv, startOpts{provider: "nope", capabilities: []string{"toString"}}))
	wantCode(t, err, backend.CodeProviderNotFound, "Provider not found: nope")
	_, err = rt.GetExecution(ctxT(t), "exec_missing")
	wantCode(t, err, backend.CodeNotFound, "Execution not found: exec_missing")
	_, err = rt.GetConversation(ctxT(t), "conv_missing")
	wantCode(t, err, backend.CodeNotFound, "Conversation not found: conv_missing")
	_, _, err = rt.ListEvents(ctxT(t), "exec_missing", 0, 0)
	wantCode(t, err, backend.CodeNotFound, "Execution not found: exec_missing")
	_, err = rt.OpenStream(context.Background(), backend.StreamRequest{ExecutionID: "exec_missing", After: 0})
	wantCode(t, err, backend.CodeNotFound, "Execution not found: exec_missing")
	_, err = rt.CancelExecution(ctxT(t), "exec_missing", nil)
	wantCode(t, err, backend.CodeNotFound, "Execution not found: exec_missing")
}

func TestDescribeAndRegistry(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	d := rt.Describe()
	if d.Name != "harness-edge" || d.Version != "0.2.0" || d.ProtocolVersion != "2026-09-02" || len(d.Providers) != 1 {
		t.Fatalf("describe %+v", d)
	}
	want := `{"capabilities":{"action.approval":"native","action.input":"native","artifact.list":"emulated","conversation.continuity":"emulated","event.replay":"native","event.streaming":"native","execution.cancel":"native"},"id":"mock","name":"Deterministic Mock Provider","protocolVersion":"2026-09-02","topologies":["embedded"],"version":"0.2.0"}`
	if got := jsonString(d.Providers[0]); got != want {
		t.Fatalf("mock manifest\n got %s\nwant %s", got, want)
	}
	d.Providers[0].Capabilities["action.approval"] = "unsupported" // a copy: no effect
	if rt.Capabilities()[0].Capabilities["action.approval"] != api.SupportLevelNative {
		t.Fatal("Describe shares the manifest map")
	}

	err := rt.SetProviders([]backend.Provider{mock.New(), mock.New()})
	wantCode(t, err, backend.CodeInvalidState, "Provider already registered: mock")
	bad := &scripted{id: "bad"}
	err = rt.SetProviders([]backend.Provider{badManifest{bad}})
	wantCode(t, err, backend.CodeValidation, "")
	if len(rt.Capabilities()) != 1 {
		t.Fatal("a failed SetProviders changed the registry")
	}

	// Replacing the registry keeps running executions on their provider instance.
	conv := newConversation(t, rt)
	exec := start(t, rt, conv, startOpts{input: "still running", config: api.JSONObject{"delayMs": 20}})
	other := &scripted{id: "other", run: func(context.Context, *backend.Run) (backend.Result, error) { return backend.Result{}, nil }}
	if err := rt.SetProviders([]backend.Provider{other}); err != nil {
		t.Fatal(err)
	}
	events, final := finalOf(t, rt, exec.ID)
	checkLog(t, final, events)
	if *final.FinalOutput != "Echo: still running" {
		t.Fatalf("final %q", *final.FinalOutput)
	}
	_, _, err = rt.StartExecution(ctxT(t), startReq(conv, startOpts{input: "x"}))
	wantCode(t, err, backend.CodeProviderNotFound, "Provider not found: mock")

	_, err = local.Open(t.TempDir(), backend.Options{Providers: []backend.Provider{badManifest{bad}}})
	wantCode(t, err, backend.CodeValidation, "")
}

type badManifest struct{ *scripted }

func (b badManifest) Manifest() api.ProviderManifest {
	m := b.scripted.Manifest()
	m.ProtocolVersion = "2026-08-19"
	return m
}
