package postgres

// terminalStates is the SQL list of the terminal execution states, api.ExecutionState.Terminal's
// (TestTerminalStatesAreTheIndexPredicate holds them equal). "state NOT IN " + terminalStates is
// the predicate of the partial index executions_running_by_owner (migrations/00001_initial.sql);
// a query that means "not finished" writes it the same way, so the planner can use that index.
const terminalStates = "('succeeded', 'failed', 'cancelled')"
