package postgres

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// terminalStates lists exactly the protocol's terminal states, and is the predicate of the
// partial index the "not finished" queries are meant to use, word for word.
func TestTerminalStatesAreTheIndexPredicate(t *testing.T) {
	var listed []string
	for _, m := range regexp.MustCompile(`'([a-z_]+)'`).FindAllStringSubmatch(terminalStates, -1) {
		listed = append(listed, m[1])
	}
	var terminal []string
	for _, s := range []api.ExecutionState{api.ExecutionStateQueued, api.ExecutionStateStarting, api.ExecutionStateRunning,
		api.ExecutionStateAwaitingApproval, api.ExecutionStateAwaitingInput, api.ExecutionStateCancelling,
		api.ExecutionStateSucceeded, api.ExecutionStateFailed, api.ExecutionStateCancelled} {
		if s.Terminal() {
			terminal = append(terminal, string(s))
		}
	}
	slices.Sort(listed)
	slices.Sort(terminal)
	if !slices.Equal(listed, terminal) {
		t.Fatalf("terminalStates lists %v, the protocol's terminal states are %v", listed, terminal)
	}
	schema, err := migrationFiles.ReadFile("migrations/00001_initial.sql")
	if err != nil {
		t.Fatal(err)
	}
	if want := "WHERE state NOT IN " + terminalStates + ";"; !strings.Contains(string(schema), want) {
		t.Fatalf("the partial index executions_running_by_owner is not %q", want)
	}
}
