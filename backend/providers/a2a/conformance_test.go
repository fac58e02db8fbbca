package a2a_test

import (
	"context"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/conformance"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// a2aScenarios are the conformance suite's scenarios that apply to an A2A agent, with the test
// agent's inputs in place of the mock's configs. "approval" does not apply: A2A has no approval
// (the manifest says action.approval unsupported); a declined input is the denial.
func a2aScenarios() []conformance.Scenario {
	value := api.JSONValue("synthetic response")
	return []conformance.Scenario{
		{Name: "basic", Input: "echo portable conformance probe"},
		{Name: "input", Input: "ask", RequiredCapabilities: []string{"action.input"},
			ActionResponse: &api.ActionResponse{Value: &value}},
		{Name: "artifacts", Input: "artifact", RequiredCapabilities: []string{"artifact.list"}, ExpectedArtifacts: new(1)},
		{Name: "denial", Input: "ask", RequiredCapabilities: []string{"action.input"},
			ActionResponse: &api.ActionResponse{Approved: new(false)}, ExpectedState: api.ExecutionStateFailed},
		{Name: "cancellation", Input: "slow 200 50", RequiredCapabilities: []string{"execution.cancel"},
			CancelAfterEvent: api.StandardEventTypeRunStarted, ExpectedState: api.ExecutionStateCancelled},
	}
}

// notApplicable are the suite's HTTP cases that need an execution waiting for approval, which
// only the mock can be asked for: the suite skips them for any other provider.
var notApplicable = map[string]bool{
	"http/invalid-action-response": true, "http/action-not-found": true, "http/approval-with-artifact": true,
	"http/duplicate-action-response": true, "http/truncated-stream": true,
}

// The conformance suite's applicable scenarios and HTTP cases pass through the edge in front of
// the JS agent; nothing else is skipped.
func (s *suite) conformanceThroughTheEdge(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := conformance.Run(ctx, conformance.Options{BaseURL: s.url, ProviderID: "agent", Scenarios: a2aScenarios()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Checks {
		if !c.Passed && !c.Skipped || c.Skipped && !notApplicable[c.Name] {
			t.Errorf("%s", c)
		}
	}
	t.Logf("conformance through the edge: %s", rep.Summary())
}
