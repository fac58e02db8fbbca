package check

import "testing"

// An execution still running after the quiet period.
func TestNotTerminalAfterQuietPeriod(t *testing.T) {
	s := cleanScenario(t)
	s.edit(t, "final2.n2", func(m map[string]any) {
		m["state"] = "running"
		m["snapshot"] = raw(t, exec("exec_2", "conv_1", "running", "two", 6.1, ""))
	})
	wantViolation(t, s.check(t), NotTerminal, "exec_2", s.line(t, "final2.n2"))
	wantViolation(t, s.check(t), FinalViewsDisagree, "exec_2", s.line(t, "final2.n1"), s.line(t, "final2.n2"))
}

// A cancel answered long after its bound on a node no fault touched.
func TestCancelBeyondBound(t *testing.T) {
	s := cleanScenario(t)
	s.edit(t, "cancel2", func(m map[string]any) { m["complete"] = at(16.5) })
	wantViolation(t, s.check(t), CancelUnbounded, "", s.line(t, "cancel2"))
}

// A respond that got no answer at all, no fault near its node.
func TestRespondUnanswered(t *testing.T) {
	s := cleanScenario(t)
	s.copyAs(t, "respond1", "respond1", "respond1b", func(m map[string]any) {
		m["status"], m["error"], m["complete"] = 0, "context deadline exceeded", at(31.2)
		delete(m, "answer")
	})
	wantViolation(t, s.check(t), RespondUnbounded, "", s.line(t, "respond1b"))
}

// The same slow cancel on a node that was killed meanwhile is excused.
func TestSlowCancelOnKilledNodeIsExcused(t *testing.T) {
	s := cleanScenario(t)
	s.edit(t, "cancel2", func(m map[string]any) { m["node"], m["invoke"], m["complete"] = "n2", at(2.4), at(12) })
	for _, v := range s.check(t).Violations {
		if v.Name == CancelUnbounded {
			t.Fatalf("a cancel to a killed node was reported: %s", v)
		}
	}
}

// A stop ended by a cont excuses only until the cont (plus a lease): a
// cancel answered late well after it is held to its bound.
func TestContEndsTheStop(t *testing.T) {
	s := cleanScenario(t)
	s.insertAfter(t, "killEnd", "stop", `{"kind":"fault","t":"`+at(3.5).Format("2006-01-02T15:04:05.999Z07:00")+`","fault":"stop","target":"n1","phase":"start"}`)
	s.insertAfter(t, "stop", "cont", `{"kind":"fault","t":"`+at(4).Format("2006-01-02T15:04:05.999Z07:00")+`","fault":"cont","target":"n1","phase":"end"}`)
	s.edit(t, "cancel2", func(m map[string]any) { m["complete"] = at(16.5) })
	wantViolation(t, s.check(t), CancelUnbounded, "", s.line(t, "cancel2"))
	s.edit(t, "cont", func(m map[string]any) { m["t"] = at(7) })
	for _, v := range s.check(t).Violations {
		if v.Name == CancelUnbounded {
			t.Fatalf("a cancel sent while the node was stopped was reported: %s", v)
		}
	}
}
