package conformance_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/conformance"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// plain is a provider other than the mock: it echoes its input and declares approval (which it
// has no way to be asked for) but neither input, artifacts nor cancellation.
type plain struct{}

func (plain) Manifest() api.ProviderManifest {
	return api.ProviderManifest{
		ID: "plain", Name: "Plain test provider", Version: "1.0.0",
		ProtocolVersion: api.ProviderManifestProtocolVersionN20260902,
		Topologies:      []api.RuntimeTopology{api.RuntimeTopologyRemote},
		Capabilities: map[string]api.SupportLevel{
			"action.approval":  api.SupportLevelNative,
			"execution.cancel": api.SupportLevelUnsupported,
			"event.streaming":  api.SupportLevelNative,
		},
	}
}

func (plain) Run(_ context.Context, run *backend.Run) (backend.Result, error) {
	if err := run.EmitText(run.Input()); err != nil {
		return backend.Result{}, err
	}
	return backend.Result{FinalOutput: run.Input()}, nil
}

// hang never finishes on its own; its cancel hook counts the cancellations (the runtime waits for
// the hook before the cancel call returns).
type hang struct{ cancelled *atomic.Int32 }

func (hang) Manifest() api.ProviderManifest {
	m := plain{}.Manifest()
	m.ID = "hang"
	return m
}

func (hang) Run(ctx context.Context, _ *backend.Run) (backend.Result, error) {
	<-ctx.Done()
	return backend.Result{}, ctx.Err()
}

func (h hang) Cancel(context.Context, string, string) error {
	h.cancelled.Add(1)
	return nil
}

// TestSuiteSkipsWhatAnotherProviderCannotBeProbedFor: against a provider that is not the mock,
// the suite runs the basic scenario and the HTTP cases that need no approval, and says why it
// skips the rest: an unsupported capability, or a behaviour only the mock's config provokes.
func TestSuiteSkipsWhatAnotherProviderCannotBeProbedFor(t *testing.T) {
	base := serve(t, nil, plain{})
	rep := run(t, conformance.Options{BaseURL: base, ProviderID: "plain"})
	skips := map[string]string{
		"approval":     "the mock's config requireApproval makes it ask for approval; provider plain has no portable switch for it",
		"input":        "provider plain does not support action.input (not declared)",
		"artifacts":    "provider plain does not support artifact.list (not declared)",
		"denial":       "the mock's config requireApproval makes it ask for approval; provider plain has no portable switch for it",
		"cancellation": "provider plain does not support execution.cancel (unsupported)",
	}
	for _, name := range []string{"invalid-action-response", "action-not-found", "approval-with-artifact", "duplicate-action-response", "truncated-stream"} {
		skips["http/"+name] = "needs an execution waiting for approval"
	}
	for name, reason := range skips {
		c, ok := rep.Check(name)
		if !ok || !c.Skipped || c.Passed || !strings.Contains(c.Detail, reason) {
			t.Errorf("%s: %v, want it skipped because %q", name, c, reason)
		}
	}
	ran := 0
	for _, c := range rep.Checks {
		if c.Skipped {
			continue
		}
		ran++
		if !c.Passed {
			t.Errorf("%s", c)
		}
		if !strings.HasPrefix(c.Name, "basic/") && !strings.HasPrefix(c.Name, "http/") {
			t.Errorf("%s ran against provider plain", c.Name)
		}
	}
	if c, _ := rep.Check("http/capability-unsupported"); !c.Passed {
		t.Errorf("%s", c)
	}
	if want := len(scenarioChecks["basic"]) + len(httpChecks) - 5; ran != want {
		t.Errorf("%d checks ran, want %d", ran, want)
	}
	if !rep.Passed() {
		t.Errorf("report: %s", rep.Summary())
	}
}

// TestSuiteReportsAnActionThatNeverCame is the reference's negative scenario: a provider that
// never requests an action, probed with the approval scenario, fails action-response-correlation.
func TestSuiteReportsAnActionThatNeverCame(t *testing.T) {
	base := serve(t, nil, plain{})
	rep := run(t, conformance.Options{BaseURL: base, ProviderID: "plain", SkipHTTPCases: true,
		Scenarios: []conformance.Scenario{{
			Name:                 "approval",
			RequiredCapabilities: []string{"action.approval"},
			ActionResponse:       &api.ActionResponse{Approved: new(true)},
		}}})
	expectFailed(t, rep, "approval/action-response-correlation", "")
	expectPassed(t, rep, "approval/execution-succeeded", "approval/one-terminal-event", "approval/execution-cleanup")
}

// TestSuiteReportsAProbeThatNeverEnds is the reference's other negative scenario: a provider that
// never finishes fails execution-probe with "Conformance probe timed out"; the cleanup cancels
// it (the provider sees its cancellation) and execution-cleanup passes.
func TestSuiteReportsAProbeThatNeverEnds(t *testing.T) {
	var cancelled atomic.Int32
	base := serve(t, nil, hang{&cancelled})
	rep := run(t, conformance.Options{BaseURL: base, ProviderID: "hang", SkipHTTPCases: true,
		Timeout:   500 * time.Millisecond, // the provider never ends: any bound is reached
		Scenarios: []conformance.Scenario{{Name: "basic"}}})
	expectFailed(t, rep, "basic/execution-probe", "Conformance probe timed out")
	expectPassed(t, rep, "basic/manifest-valid", "basic/idempotency-reuse", "basic/idempotency-conflict", "basic/execution-cleanup")
	if n := cancelled.Load(); n != 1 {
		t.Errorf("the provider saw %d cancellations, want 1", n)
	}
}
