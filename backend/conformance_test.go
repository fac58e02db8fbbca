package backend_test

// An in-process port of the reference conformance runner (docs/protocol.md §14): the same
// checks, in the same order, run against a fresh runtime on a real bbolt file. The portable HTTP
// suite lives in package conformance; this one pins the runtime itself, and judges what it read
// with the suite's own evaluator (conformance.Evaluate), so the checks are written once.

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/conformance"
	"github.com/harness-edge/harness-edge/sdk/api"
)

type conformanceOptions struct {
	input             string
	timeout           time.Duration // default 10s
	cleanupTimeout    time.Duration // default 1s
	config            api.JSONObject
	capabilities      []string
	actionResponse    *api.ActionResponse
	cancelAfterEvent  api.StandardEventType
	expectedState     api.ExecutionState // default succeeded
	expectedArtifacts *int
	cancelTimeout     time.Duration // the runtime's CancelTimeout
}

type conformanceCheck struct {
	name   string
	passed bool
	detail string
}

type conformanceReport struct {
	providerID string
	passed     bool
	checks     []conformanceCheck
}

func (r conformanceReport) check(name string) (conformanceCheck, bool) {
	for _, c := range r.checks {
		if c.name == name {
			return c, true
		}
	}
	return conformanceCheck{}, false
}

func (r conformanceReport) names() []string {
	out := make([]string, len(r.checks))
	for i, c := range r.checks {
		out[i] = c.name
	}
	return out
}

var errProbeTimeout = errors.New("Conformance probe timed out")

func runConformance(t *testing.T, p backend.Provider, o conformanceOptions) (rep conformanceReport) {
	t.Helper()
	if o.input == "" {
		o.input = "portable conformance probe"
	}
	if o.timeout == 0 {
		o.timeout = 10 * time.Second
	}
	if o.cleanupTimeout == 0 {
		o.cleanupTimeout = time.Second
	}
	if o.expectedState == "" {
		o.expectedState = api.ExecutionStateSucceeded
	}
	manifest := p.Manifest()
	rep.providerID = manifest.ID
	add := func(name string, passed bool, detail string) {
		rep.checks = append(rep.checks, conformanceCheck{name, passed, detail})
	}
	defer func() {
		rep.passed = !slices.ContainsFunc(rep.checks, func(c conformanceCheck) bool { return !c.passed })
	}()

	rt, err := local.Open(t.TempDir(), backend.Options{Providers: []backend.Provider{p}, CancelTimeout: o.cancelTimeout})
	add("manifest-valid", err == nil, errDetail(err))
	if err != nil {
		return rep
	}
	t.Cleanup(func() { rt.Close() })
	ctx := context.Background()

	var executionID string
	probeErr := func() error {
		conv, err := rt.CreateConversation(ctx, api.JSONObject{"suite": "conformance"})
		if err != nil {
			return err
		}
		req := startReq(conv.ID, startOpts{provider: manifest.ID, input: o.input, config: o.config, capabilities: o.capabilities, key: "conformance-basic"})
		if req.RequiredCapabilities == nil {
			req.RequiredCapabilities = &[]string{}
		}
		exec, _, err := rt.StartExecution(ctx, req)
		if err != nil {
			return err
		}
		executionID = exec.ID
		again, _, err := rt.StartExecution(ctx, req)
		add("idempotency-reuse", err == nil && again.ID == exec.ID, errDetail(err))
		conflicting := req
		conflicting.Input = o.input + " (conflicting request)"
		_, _, err = rt.StartExecution(ctx, conflicting)
		conflictDetected := backend.ErrorCode(err) == backend.CodeIdempotencyConflict
		add("idempotency-conflict", conflictDetected, map[bool]string{true: "", false: errDetail(err)}[conflictDetected])

		events, err := probeEvents(rt, exec.ID, o)
		if err != nil {
			return err
		}
		final, err := rt.GetExecution(ctx, exec.ID)
		if err != nil {
			return err
		}
		artifacts, err := rt.ListArtifacts(ctx, exec.ID)
		if err != nil {
			return err
		}
		expected := conformance.Scenario{ExpectedState: o.expectedState, ActionResponse: o.actionResponse, ExpectedArtifacts: o.expectedArtifacts}
		checks := conformance.Evaluate(expected, final, events, artifacts, func(after int64) ([]api.RuntimeEvent, error) {
			list, _, err := rt.ListEvents(ctx, exec.ID, after, 0)
			out := make([]api.RuntimeEvent, len(list))
			for i, e := range list {
				if out[i], err = e.Decode(); err != nil {
					return nil, err
				}
			}
			return out, err
		})
		for _, c := range checks {
			add(c.Name, c.Passed, c.Detail)
		}
		return nil
	}()
	if probeErr != nil {
		add("execution-probe", false, probeErr.Error())
	}
	if executionID != "" {
		passed, detail := cleanupProbe(rt, executionID, o.cleanupTimeout)
		add("execution-cleanup", passed, detail)
	}
	return rep
}

// probeEvents collects every event, answering actions and cancelling as configured, bounded by
// the probe timeout.
func probeEvents(rt *backend.Runtime, id string, o conformanceOptions) ([]api.RuntimeEvent, error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	var events []api.RuntimeEvent
	for e, err := range backend.FollowExecution(ctx, rt, id, 0) {
		if errors.Is(err, context.DeadlineExceeded) {
			return events, errProbeTimeout
		}
		if err != nil {
			return events, err
		}
		re, err := e.Decode()
		if err != nil {
			return events, err
		}
		events = append(events, re)
		if re.Type == api.StandardEventTypeActionRequired && o.actionResponse != nil {
			response := *o.actionResponse
			if _, err := rt.RespondToAction(ctx, id, typed(re.Data.AsActionRequest()).ID, func() (api.ActionResponse, error) { return response, nil }); err != nil {
				return events, err
			}
		}
		if re.Type == o.cancelAfterEvent {
			reason := "Conformance cancellation probe"
			if _, err := rt.CancelExecution(ctx, id, &reason); err != nil {
				return events, err
			}
		}
	}
	return events, nil
}

// cleanupProbe cancels a still-running execution (bounded) and passes iff the last event carries
// no providerCleanupError.
func cleanupProbe(rt *backend.Runtime, id string, bound time.Duration) (bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	exec, err := rt.GetExecution(ctx, id)
	if err != nil {
		return false, err.Error()
	}
	if exec.State != api.ExecutionStateSucceeded && exec.State != api.ExecutionStateFailed && exec.State != api.ExecutionStateCancelled {
		reason := "Conformance probe stopped"
		if _, err := rt.CancelExecution(ctx, id, &reason); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return false, "Conformance cleanup timed out"
			}
			return false, err.Error()
		}
	}
	events, _, err := rt.ListEvents(context.Background(), id, 0, 0)
	if err != nil || len(events) == 0 {
		return false, errDetail(err)
	}
	last, err := events[len(events)-1].Decode()
	if err != nil {
		return false, err.Error()
	}
	if msg := typed(last.Data.AsRunCancelledData()).ProviderCleanupError; msg != nil {
		return false, *msg
	}
	return true, ""
}

func errDetail(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func intPtr(n int) *int { return &n }

func responsePtr(r api.ActionResponse) *api.ActionResponse { return &r }

func boolPtr(b bool) *bool { return &b }

// The six reference scenarios against the mock: every check passes, in the reference's order.
func TestConformanceMockScenarios(t *testing.T) {
	var value api.JSONValue = "synthetic response"
	scenarios := []struct {
		name   string
		opts   conformanceOptions
		checks []string
	}{
		{"basic", conformanceOptions{}, nil},
		{"approval", conformanceOptions{config: api.JSONObject{"requireApproval": true}, capabilities: []string{"action.approval"},
			actionResponse: responsePtr(api.ActionResponse{Approved: boolPtr(true)})}, nil},
		{"input", conformanceOptions{config: api.JSONObject{"requestInput": true}, capabilities: []string{"action.input"},
			actionResponse: responsePtr(api.ActionResponse{Value: &value})}, nil},
		{"artifacts", conformanceOptions{config: api.JSONObject{"artifactName": "synthetic.txt"}, capabilities: []string{"artifact.list"}, expectedArtifacts: intPtr(1)}, nil},
		{"denial", conformanceOptions{config: api.JSONObject{"requireApproval": true}, capabilities: []string{"action.approval"},
			actionResponse: responsePtr(api.ActionResponse{Approved: boolPtr(false)}), expectedState: api.ExecutionStateFailed}, nil},
		{"cancellation", conformanceOptions{config: api.JSONObject{"delayMs": 100}, capabilities: []string{"execution.cancel"},
			cancelAfterEvent: api.StandardEventTypeRunStarted, expectedState: api.ExecutionStateCancelled}, nil},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			rep := runConformance(t, mock.New(), sc.opts)
			if !rep.passed {
				t.Fatalf("report failed: %+v", rep.checks)
			}
			want := []string{"manifest-valid", "idempotency-reuse", "idempotency-conflict", "execution-" + string(orDefault(sc.opts.expectedState, api.ExecutionStateSucceeded)),
				"events-present", "event-sequence-contiguous", "one-terminal-event", "terminal-state", "final-output-event", "terminal-event-last"}
			if sc.opts.actionResponse != nil {
				want = append(want, "action-response-correlation")
			}
			want = append(want, "terminal-event-matches-state", "cursor-replay", "artifact-event-correlation")
			if sc.opts.expectedArtifacts != nil {
				want = append(want, "artifact-count")
			}
			want = append(want, "execution-cleanup")
			if !slices.Equal(rep.names(), want) {
				t.Fatalf("checks %v\nwant %v", rep.names(), want)
			}
		})
	}
}

func orDefault[T comparable](v, fallback T) T {
	var zero T
	if v == zero {
		return fallback
	}
	return v
}

func TestConformanceNegativeScenarios(t *testing.T) {
	approval := conformanceOptions{config: api.JSONObject{"requireApproval": true}, capabilities: []string{"action.approval"},
		actionResponse: responsePtr(api.ActionResponse{Approved: boolPtr(true)})}

	t.Run("provider that never requests an action", func(t *testing.T) {
		p := &scripted{run: func(context.Context, *backend.Run) (backend.Result, error) {
			return backend.Result{FinalOutput: "ok"}, nil
		}}
		rep := runConformance(t, p, approval)
		c, _ := rep.check("action-response-correlation")
		if rep.passed || c.passed || c.detail != "" {
			t.Fatalf("report %+v", rep.checks)
		}
		for _, c := range rep.checks {
			if c.name != "action-response-correlation" && !c.passed {
				t.Fatalf("unexpected failure %+v", c)
			}
		}
	})

	t.Run("provider that never finishes", func(t *testing.T) {
		aborted := make(chan struct{})
		p := &cancelable{scripted: scripted{run: func(ctx context.Context, _ *backend.Run) (backend.Result, error) {
			<-ctx.Done()
			close(aborted)
			return backend.Result{}, ctx.Err()
		}}}
		rep := runConformance(t, p, conformanceOptions{timeout: 20 * time.Millisecond})
		probe, _ := rep.check("execution-probe")
		cleanup, _ := rep.check("execution-cleanup")
		if probe.passed || probe.detail != "Conformance probe timed out" || !cleanup.passed {
			t.Fatalf("report %+v", rep.checks)
		}
		<-aborted
		if p.calls.Load() != 1 {
			t.Fatalf("cancel hook called %d times", p.calls.Load())
		}
	})

	t.Run("cancel hook that rejects", func(t *testing.T) {
		p := &cancelable{scripted: scripted{run: blockUntilCancelled}}
		p.cancel = func(context.Context, string, string) error { return errors.New("cleanup rejected") }
		rep := runConformance(t, p, conformanceOptions{timeout: 20 * time.Millisecond})
		cleanup, _ := rep.check("execution-cleanup")
		if cleanup.passed || cleanup.detail != "cleanup rejected" {
			t.Fatalf("report %+v", rep.checks)
		}
	})

	t.Run("cancel hook that never settles", func(t *testing.T) {
		stuck := make(chan struct{})
		t.Cleanup(func() { close(stuck) })
		p := &cancelable{scripted: scripted{run: blockUntilCancelled}}
		p.cancel = func(context.Context, string, string) error { <-stuck; return nil }
		rep := runConformance(t, p, conformanceOptions{timeout: 20 * time.Millisecond, cleanupTimeout: 20 * time.Millisecond, cancelTimeout: 300 * time.Millisecond})
		cleanup, _ := rep.check("execution-cleanup")
		if cleanup.passed || cleanup.detail != "Conformance cleanup timed out" {
			t.Fatalf("report %+v", rep.checks)
		}
	})

	t.Run("invalid manifest", func(t *testing.T) {
		rep := runConformance(t, badManifest{&scripted{id: "bad"}}, conformanceOptions{})
		if rep.passed || len(rep.checks) != 1 || rep.checks[0].name != "manifest-valid" || rep.checks[0].detail == "" {
			t.Fatalf("report %+v", rep.checks)
		}
	})
}
