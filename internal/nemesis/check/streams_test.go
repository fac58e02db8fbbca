package check

import "testing"

// An event dropped from a resumed execution stream is a gap between the
// events either side of it.
func TestEventDroppedIsAGap(t *testing.T) {
	s := cleanScenario(t)
	s.drop(t, "x1.5")
	wantViolation(t, s.check(t), EventGap, "exec_1", s.line(t, "x1.4"), s.line(t, "x1.6"))
}

// A stream opened at its beginning must show sequence 1 first.
func TestFirstEventDroppedIsAGap(t *testing.T) {
	s := cleanScenario(t)
	s.drop(t, "c1.2.1")
	wantViolation(t, s.check(t), EventGap, "exec_2", s.line(t, "c1.2.2"))
}

// An event delivered twice across a resume (the resumed subscription
// repeats the last one) is a duplicate.
func TestEventDuplicatedAcrossResume(t *testing.T) {
	s := cleanScenario(t)
	s.copyAs(t, "x1.3", "x1.3", "x1.3again", func(m map[string]any) {
		m["subscription"], m["resumedFrom"], m["node"] = "s2", "s1", "n2"
	})
	wantViolation(t, s.check(t), EventDuplicate, "exec_1", s.line(t, "x1.3"), s.line(t, "x1.3again"))
}

// An event duplicated on the conversation stream is a duplicate there.
func TestEventDuplicatedOnConversationStream(t *testing.T) {
	s := cleanScenario(t)
	s.duplicate(t, "c1.1.4")
	wantViolation(t, s.check(t), EventDuplicate, "exec_1", s.line(t, "c1.1.4"), s.line(t, "c1.1.4#2"))
}

// An event moved later than its successors arrives out of order.
func TestEventMovedIsOutOfOrder(t *testing.T) {
	s := cleanScenario(t)
	s.moveAfter(t, "x1.3", "x1.5")
	wantViolation(t, s.check(t), EventOutOfOrder, "exec_1", s.line(t, "x1.5"), s.line(t, "x1.3"))
}

// A moved event on the tenant stream (which starts at "now", so its first
// event may be any) is still out of order.
func TestEventMovedOnTenantStream(t *testing.T) {
	s := cleanScenario(t)
	s.moveAfter(t, "t.2.2", "t.2.3")
	wantViolation(t, s.check(t), EventOutOfOrder, "exec_2", s.line(t, "t.2.3"), s.line(t, "t.2.2"))
}

// Two terminal events for one execution.
func TestTwoTerminalEvents(t *testing.T) {
	s := cleanScenario(t)
	s.copyAs(t, "c1.1.7", "c1.1.7", "c1.1.8", func(m map[string]any) {
		m["sequence"], m["type"], m["cursor"] = 8, "run.failed", "8"
	})
	wantViolation(t, s.check(t), TwoTerminalEvents, "exec_1", s.line(t, "x1.7"), s.line(t, "c1.1.8"))
}

// An event after the terminal one.
func TestEventAfterTerminal(t *testing.T) {
	s := cleanScenario(t)
	s.copyAs(t, "c1.1.6", "c1.1.7", "c1.1.8", func(m map[string]any) {
		m["sequence"], m["type"], m["cursor"] = 8, "output.text.delta", "8"
	})
	wantViolation(t, s.check(t), EventAfterTerminal, "exec_1", s.line(t, "x1.7"), s.line(t, "c1.1.8"))
}

// Two views disagree on what a sequence is.
func TestEventMismatchBetweenViews(t *testing.T) {
	s := cleanScenario(t)
	s.edit(t, "c1.1.6", func(m map[string]any) { m["type"] = "output.text.delta" })
	wantViolation(t, s.check(t), EventMismatch, "exec_1", s.line(t, "x1.6"), s.line(t, "c1.1.6"))
}

// Two run.started: the execution ran twice.
func TestStartedTwice(t *testing.T) {
	s := cleanScenario(t)
	s.edit(t, "c1.1.5", func(m map[string]any) { m["type"] = "run.started" })
	s.edit(t, "x1.5", func(m map[string]any) { m["type"] = "run.started" })
	wantViolation(t, s.check(t), StartedTwice, "exec_1", s.line(t, "x1.2"), s.line(t, "x1.5"))
}

// The terminal event and the final read disagree.
func TestTerminalEventAndFinalStateDisagree(t *testing.T) {
	s := cleanScenario(t)
	for _, l := range []string{"x2.3", "c1.2.3", "t.2.3"} {
		s.edit(t, l, func(m map[string]any) { m["type"] = "run.failed" })
	}
	wantViolation(t, s.check(t), TerminalMismatch, "exec_2")
}

// A filtered stream skips on purpose: a gap there is no violation, but
// order still holds.
func TestFilteredStreamMaySkip(t *testing.T) {
	s := cleanScenario(t)
	for _, l := range []string{"c1.1.1", "c1.1.2", "c1.1.3", "c1.1.4", "c1.1.5", "c1.1.6", "c1.1.7", "c1.2.1", "c1.2.2", "c1.2.3"} {
		s.edit(t, l, func(m map[string]any) { m["filtered"] = true })
	}
	s.drop(t, "c1.1.5")
	if rep := s.check(t); !rep.OK() {
		t.Fatalf("a filtered stream's skip was reported:\n%s", describe(rep))
	}
	s.moveAfter(t, "c1.1.4", "c1.1.6")
	wantViolation(t, s.check(t), EventOutOfOrder, "exec_1", s.line(t, "c1.1.4"))
}

// After a stream.gap message the server said what it trimmed: the next
// event of each execution may jump.
func TestStreamGapMessageExcusesTheJump(t *testing.T) {
	s := cleanScenario(t)
	s.drop(t, "c1.1.5")
	s.copyAs(t, "c1.1.4", "c1.1.4", "gap", func(m map[string]any) {
		m["executionId"], m["sequence"], m["type"], m["data"] = "", 0, "stream.gap", map[string]any{"type": "stream.gap"}
	})
	if rep := s.check(t); !rep.OK() {
		t.Fatalf("a jump announced by stream.gap was reported:\n%s", describe(rep))
	}
}

// Two views of one event with different contents (here: the answer's
// decision) disagree.
func TestEventContentsDifferBetweenViews(t *testing.T) {
	s := cleanScenario(t)
	s.edit(t, "c1.1.4", func(m map[string]any) {
		m["data"].(map[string]any)["data"].(map[string]any)["decision"] = "reject"
	})
	wantViolation(t, s.check(t), EventMismatch, "exec_1", s.line(t, "x1.4"), s.line(t, "c1.1.4"))
}
