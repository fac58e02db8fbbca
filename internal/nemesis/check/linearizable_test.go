package check

import "testing"

// A read after the execution was read succeeded returns it running again.
func TestStaleReadAfterTerminal(t *testing.T) {
	s := cleanScenario(t)
	s.copyAs(t, "get2", "cancel2", "stale", func(m map[string]any) { m["invoke"], m["complete"] = at(7), at(7.1) })
	wantViolation(t, s.check(t), StaleRead, "exec_1", s.line(t, "stale"))
}

// A read that began after a stream delivered the terminal event finds the
// execution running: the event was committed before it was received.
func TestStaleReadAfterTerminalEventReceived(t *testing.T) {
	s := cleanScenario(t)
	s.copyAs(t, "get2", "c1.1.7", "stale", func(m map[string]any) { m["invoke"], m["complete"] = at(6.05), at(6.06) })
	wantViolation(t, s.check(t), StaleRead, "exec_1", s.line(t, "x1.7"), s.line(t, "stale"))
}

// A node answers 404 for an execution whose start was acknowledged before
// the read began.
func TestNotFoundAfterAcknowledgedStart(t *testing.T) {
	s := cleanScenario(t)
	s.copyAs(t, "get1", "get1", "gone", func(m map[string]any) {
		m["status"], m["answer"], m["executionId"] = 404, raw(t, `{"code":"NOT_FOUND","message":"Execution not found: exec_1"}`), "exec_1"
	})
	wantViolation(t, s.check(t), StaleRead, "exec_1", s.line(t, "start1"), s.line(t, "gone"))
}

// A 404 that overlaps the start (the read may have come first) is fine.
func TestNotFoundBeforeStartAnswered(t *testing.T) {
	s := cleanScenario(t)
	s.copyAs(t, "get1", "start1", "early", func(m map[string]any) {
		m["status"], m["answer"], m["invoke"], m["complete"] = 404, raw(t, `{"code":"NOT_FOUND","message":"Execution not found: exec_1"}`), at(0.21), at(0.22)
	})
	if rep := s.check(t); !rep.OK() {
		t.Fatalf("a 404 concurrent with the start was reported:\n%s", describe(rep))
	}
}

// A read returns an older version of the same state: running from before
// the approval after running from after it (updatedAt tells them apart).
func TestStaleReadOlderVersion(t *testing.T) {
	s := cleanScenario(t)
	s.copyAs(t, "get2", "get2", "stale", func(m map[string]any) {
		m["invoke"], m["complete"] = at(1.95), at(1.96)
		m["answer"] = raw(t, exec("exec_1", "conv_1", "running", "one", 0.35, ""))
	})
	wantViolation(t, s.check(t), StaleRead, "exec_1", s.line(t, "stale"))
}

// Overlapping reads may see either order: no violation.
func TestConcurrentReadsMayInterleave(t *testing.T) {
	s := cleanScenario(t)
	// A read of "awaiting_approval" that overlaps the respond's answer.
	s.copyAs(t, "get1b", "respond1", "overlap", func(m map[string]any) { m["invoke"], m["complete"] = at(1.21), at(1.4) })
	if rep := s.check(t); !rep.OK() {
		t.Fatalf("overlapping reads were reported:\n%s", describe(rep))
	}
}

func TestReachable(t *testing.T) {
	for _, c := range []struct {
		from, to string
		want     bool
	}{
		{"queued", "succeeded", true}, {"awaiting_approval", "running", true}, {"running", "running", true},
		{"succeeded", "running", false}, {"cancelling", "running", false}, {"running", "queued", false}, {"cancelled", "failed", false},
	} {
		if got := reachable(c.from, c.to); got != c.want {
			t.Errorf("reachable(%s, %s) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
}
