package check

import "testing"

// The clean scenario breaks no promise: without this, every doctored test
// below could pass on a checker that flags everything.
func TestCleanHistoryPasses(t *testing.T) {
	rep := cleanScenario(t).check(t)
	if !rep.OK() {
		t.Fatalf("clean history has violations:\n%s", describe(rep))
	}
	if len(rep.Notes) != 0 {
		t.Fatalf("clean history has notes:\n%s", describe(rep))
	}
	if rep.Seed != 7 || rep.Executions != 2 || rep.Events != 22 || rep.Faults["kill"] != 1 || rep.Requests["start"] != 4 ||
		rep.Linearized != 2 || rep.Operations != 15 {
		t.Fatalf("figures: seed %d executions %d events %d faults %v requests %v linearized %d/%d", rep.Seed, rep.Executions, rep.Events, rep.Faults, rep.Requests, rep.Linearized, rep.Operations)
	}
}
