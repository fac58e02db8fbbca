package conformance

import (
	"fmt"
	"slices"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Evaluate is checks 6–17 of the reference runner (docs/protocol.md §14) over one execution of
// scenario sc: its final snapshot, its events in the order received, its artifacts, and replay,
// which reads its events after a cursor. The checks are named without the scenario's prefix,
// in the reference's order. It is the one evaluator: the suite runs it on what it read over
// HTTP, the runtime's own tests (backend/conformance_test.go) on what they read in process.
func Evaluate(sc Scenario, final api.Execution, events []api.RuntimeEvent, artifacts []api.Artifact,
	replay func(after int64) ([]api.RuntimeEvent, error)) []Check {
	if sc.ExpectedState == "" {
		sc.ExpectedState = api.ExecutionStateSucceeded
	}
	var checks []Check
	add := func(name string, passed bool, detail string) {
		checks = append(checks, Check{Name: name, Passed: passed, Detail: detail})
	}
	add("execution-"+string(sc.ExpectedState), final.State == sc.ExpectedState, string(final.State))
	add("events-present", len(events) >= 3, fmt.Sprintf("%d events", len(events)))

	contiguous, detail := true, ""
	for i, e := range events {
		if e.Sequence != int64(i+1) {
			contiguous, detail = false, fmt.Sprintf("event %d has sequence %d, want %d", i+1, e.Sequence, i+1)
			break
		}
	}
	add("event-sequence-contiguous", contiguous, detail)

	var terminals []api.RuntimeEvent
	for _, e := range events {
		if e.Type.Terminal() {
			terminals = append(terminals, e)
		}
	}
	add("one-terminal-event", len(terminals) == 1, fmt.Sprintf("%d terminal events", len(terminals)))
	add("terminal-state", final.State.Terminal(), string(final.State))

	hasDone := slices.ContainsFunc(events, func(e api.RuntimeEvent) bool { return e.Type == api.StandardEventTypeOutputTextDone })
	wantDone := sc.ExpectedState == api.ExecutionStateSucceeded
	add("final-output-event", hasDone == wantDone, map[bool]string{true: "", false: fmt.Sprintf("output.text.done present: %t, want %t", hasDone, wantDone)}[hasDone == wantDone])

	last := len(terminals) == 1 && len(events) > 0 && terminals[0].Sequence == events[len(events)-1].Sequence
	detail = ""
	if !last && len(events) > 0 {
		detail = fmt.Sprintf("last event is %s (sequence %d)", events[len(events)-1].Type, events[len(events)-1].Sequence)
	}
	add("terminal-event-last", last, detail)

	if sc.ActionResponse != nil {
		correlated := false
		for _, e := range events {
			if e.Type != api.StandardEventTypeActionRequired {
				continue
			}
			correlated = true
			action, _ := e.Data.AsActionRequest()
			n := 0
			for _, r := range events {
				if r.Type != api.StandardEventTypeActionResponded {
					continue
				}
				if responded, _ := r.Data.AsActionRespondedData(); responded.ActionID == action.ID {
					n++
				}
			}
			if n != 1 {
				correlated = false
				break
			}
		}
		add("action-response-correlation", correlated, "")
	}

	wantTerminal := sc.ExpectedState.TerminalEvent()
	matches := len(terminals) == 1 && terminals[0].Type == wantTerminal
	detail = ""
	if !matches && len(terminals) > 0 {
		detail = fmt.Sprintf("terminal event %s, want %s", terminals[0].Type, wantTerminal)
	}
	add("terminal-event-matches-state", matches, detail)

	cursor := int64(len(events) / 2)
	replayed, err := replay(cursor)
	var want []api.RuntimeEvent
	for _, e := range events {
		if e.Sequence > cursor {
			want = append(want, e)
		}
	}
	switch {
	case err != nil:
		add("cursor-replay", false, err.Error())
	case jsonString(replayed) != jsonString(want):
		add("cursor-replay", false, fmt.Sprintf("JSON replay after %d returned sequences %v, the stream had %v", cursor, sequences(replayed), sequences(want)))
	default:
		add("cursor-replay", true, "")
	}

	var created []api.RuntimeEvent
	for _, e := range events {
		if e.Type == api.StandardEventTypeArtifactCreated {
			created = append(created, e)
		}
	}
	correlated := len(created) == len(artifacts)
	for _, a := range artifacts {
		n := 0
		for _, e := range created {
			if artifact, _ := e.Data.AsArtifact(); artifact.ID == a.ID {
				n++
			}
		}
		correlated = correlated && n == 1
	}
	add("artifact-event-correlation", correlated, map[bool]string{true: "", false: fmt.Sprintf("%d artifact.created events, %d artifacts listed", len(created), len(artifacts))}[correlated])
	if sc.ExpectedArtifacts != nil {
		add("artifact-count", len(artifacts) == *sc.ExpectedArtifacts, fmt.Sprintf("%d artifacts", len(artifacts)))
	}
	return checks
}
