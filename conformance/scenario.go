package conformance

import (
	"fmt"
	"slices"
	"strings"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Scenario is one execution probe: the options of the reference's runProviderConformance.
type Scenario struct {
	// Name prefixes the scenario's check names ("basic", "approval", …).
	Name string
	// Input defaults to Options.Input.
	Input                string
	Config               api.JSONObject
	RequiredCapabilities []string
	// ActionResponse answers every action.required event; nil answers none.
	ActionResponse *api.ActionResponse
	// CancelAfterEvent cancels the execution (reason "Conformance cancellation probe") once an
	// event of this type has arrived.
	CancelAfterEvent api.StandardEventType
	// ExpectedState defaults to succeeded.
	ExpectedState api.ExecutionState
	// ExpectedArtifacts, when set, is the number of artifacts the execution must list.
	ExpectedArtifacts *int
	// MockTrigger, when set, says what Config makes the mock do that the scenario depends on
	// (ask for approval, ask for input, emit an artifact). Against another provider the
	// scenario is skipped with it as the reason: a provider has no portable switch for that.
	MockTrigger string
}

// Scenarios returns the reference's six scenarios with the mock's configs (§14).
func Scenarios() []Scenario {
	return []Scenario{
		{Name: "basic"},
		{
			Name:                 "approval",
			Config:               api.JSONObject{"requireApproval": true},
			RequiredCapabilities: []string{"action.approval"},
			ActionResponse:       &api.ActionResponse{Approved: new(true)},
			MockTrigger:          "the mock's config requireApproval makes it ask for approval",
		},
		{
			Name:                 "input",
			Config:               api.JSONObject{"requestInput": true},
			RequiredCapabilities: []string{"action.input"},
			ActionResponse:       &api.ActionResponse{Value: new(api.JSONValue("synthetic response"))},
			MockTrigger:          "the mock's config requestInput makes it ask for input",
		},
		{
			Name:                 "artifacts",
			Config:               api.JSONObject{"artifactName": "synthetic.txt"},
			RequiredCapabilities: []string{"artifact.list"},
			ExpectedArtifacts:    new(1),
			MockTrigger:          "the mock's config artifactName makes it emit an artifact",
		},
		{
			Name:                 "denial",
			Config:               api.JSONObject{"requireApproval": true},
			RequiredCapabilities: []string{"action.approval"},
			ActionResponse:       &api.ActionResponse{Approved: new(false)},
			ExpectedState:        api.ExecutionStateFailed,
			MockTrigger:          "the mock's config requireApproval makes it ask for approval",
		},
		{
			Name:                 "cancellation",
			Config:               api.JSONObject{"delayMs": 100},
			RequiredCapabilities: []string{"execution.cancel"},
			CancelAfterEvent:     api.StandardEventTypeRunStarted,
			ExpectedState:        api.ExecutionStateCancelled,
		},
	}
}

// selectScenarios decides what runs against the provider and reports the rest as skipped.
func selectScenarios(opts Options, m api.ProviderManifest, found bool) (run []Scenario, skipped []Check) {
	scenarios := opts.Scenarios
	custom := scenarios != nil
	if !custom {
		scenarios = Scenarios()
	}
	isMock := opts.ProviderID == DefaultProviderID
	for _, sc := range scenarios {
		if found {
			if missing := unsupported(m, sc.RequiredCapabilities); len(missing) > 0 {
				skipped = append(skipped, Check{Name: sc.Name, Skipped: true,
					Detail: fmt.Sprintf("provider %s does not support %s", m.ID, strings.Join(missing, ", "))})
				continue
			}
		}
		if !isMock && !custom {
			if sc.MockTrigger != "" {
				skipped = append(skipped, Check{Name: sc.Name, Skipped: true,
					Detail: sc.MockTrigger + "; provider " + opts.ProviderID + " has no portable switch for it (pass your own scenarios to probe it)"})
				continue
			}
			// The rest of the config only paces the mock; another provider gets none (ACP
			// providers, for one, refuse any per-execution config).
			sc.Config = nil
		}
		run = append(run, sc)
	}
	return run, skipped
}

// unsupported lists the capabilities the manifest does not support (absent or "unsupported"),
// with the level, sorted.
func unsupported(m api.ProviderManifest, caps []string) []string {
	var out []string
	for _, c := range caps {
		level, ok := m.Capabilities[c]
		switch {
		case !ok:
			out = append(out, c+" (not declared)")
		case level == api.SupportLevelUnsupported:
			out = append(out, c+" (unsupported)")
		}
	}
	slices.Sort(out)
	return out
}
