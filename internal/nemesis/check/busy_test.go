package check

import "testing"

// Under reject a second execution was accepted while the first was
// provably unfinished (acknowledged before, read unfinished after).
func TestRejectAcceptedTwo(t *testing.T) {
	s := cleanScenario(t)
	s.edit(t, "conv1", func(m map[string]any) {
		m["body"], m["answer"] = raw(t, `{"busyPolicy":"reject"}`), raw(t, `{"id":"conv_1","busyPolicy":"reject"}`)
	})
	wantViolation(t, s.check(t), RejectTwoRunning, "exec_2", s.line(t, "start1"), s.line(t, "start2"), s.line(t, "get1b"))
}

// Under enqueue the waiting execution started before its predecessor's
// terminal event on the conversation stream.
func TestEnqueueStartedBeforePredecessorEnded(t *testing.T) {
	s := cleanScenario(t)
	s.moveAfter(t, "c1.2.2", "c1.2.1")
	wantViolation(t, s.check(t), EnqueueOutOfOrder, "exec_2", s.line(t, "c1.2.2"), s.line(t, "c1.1.7"))
}

// Under enqueue a read saw the waiting execution running while a later
// read still saw its predecessor unfinished.
func TestEnqueueRanWhilePredecessorRead(t *testing.T) {
	s := cleanScenario(t)
	s.copyAs(t, "get1", "start2", "get2running", func(m map[string]any) {
		m["path"], m["invoke"], m["complete"] = "/v1/executions/exec_2", at(1.11), at(1.12)
		m["answer"] = raw(t, exec("exec_2", "conv_1", "running", "two", 1.11, ""))
	})
	wantViolation(t, s.check(t), EnqueueOutOfOrder, "exec_2", s.line(t, "get2running"), s.line(t, "get1b"))
}

// Under enqueue an accepted execution does not wait for one provably
// unfinished.
func TestEnqueueMissedPredecessor(t *testing.T) {
	s := cleanScenario(t)
	s.edit(t, "start2", func(m map[string]any) {
		m["answer"] = raw(t, exec("exec_2", "conv_1", "queued", "two", 1.05, ""))
	})
	wantViolation(t, s.check(t), EnqueueMissedTurn, "exec_2", s.line(t, "start2"), s.line(t, "get1b"))
}

// Under interrupt the predecessor ran on to success long after the
// interrupting start was acknowledged.
func TestInterruptDidNotCancel(t *testing.T) {
	s := cleanScenario(t)
	s.edit(t, "start2", func(m map[string]any) {
		m["body"] = raw(t, `{"conversationId":"conv_1","providerId":"mock","input":"two","idempotencyKey":"k2","busyPolicy":"interrupt"}`)
	})
	wantViolation(t, s.check(t), InterruptNotCancelled, "exec_1", s.line(t, "start2"), s.line(t, "x1.7"))
}

// max_running 1: the second start was admitted while the first was
// provably unfinished.
func TestMaxRunningExceeded(t *testing.T) {
	s := cleanScenario(t)
	s.edit(t, "run", func(m map[string]any) { m["settings"].(map[string]any)["maxRunning"] = 1 })
	wantViolation(t, s.check(t), MaxRunningExceeded, "exec_2", s.line(t, "start2"), s.line(t, "get1b"))
}
