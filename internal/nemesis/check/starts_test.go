package check

import "testing"

// An acknowledged start that no final read finds.
func TestAcknowledgedStartMissing(t *testing.T) {
	s := cleanScenario(t)
	s.drop(t, "final2.n1")
	s.drop(t, "final2.n2")
	wantViolation(t, s.check(t), StartMissing, "exec_2", s.line(t, "start2"))
}

// An acknowledged start that one node does not know after the quiet period.
func TestAcknowledgedStartMissingOnOneNode(t *testing.T) {
	s := cleanScenario(t)
	s.edit(t, "final2.n2", func(m map[string]any) {
		m["status"], m["state"] = 404, ""
		delete(m, "snapshot")
	})
	wantViolation(t, s.check(t), StartMissing, "exec_2", s.line(t, "start2"), s.line(t, "final2.n2"))
}

// A conversation deleted on purpose leaves the views: not missing.
func TestDeletedConversationLeavesTheViews(t *testing.T) {
	s := cleanScenario(t)
	for _, l := range []string{"final1.n1", "final1.n2", "final2.n1", "final2.n2"} {
		s.edit(t, l, func(m map[string]any) {
			m["status"], m["state"] = 404, ""
			delete(m, "snapshot")
		})
	}
	s.copyAs(t, "conv1", "cancel2", "delete", func(m map[string]any) {
		m["op"], m["method"], m["path"], m["conversationId"] = "deleteConversation", "DELETE", "/v1/conversations/conv_1", "conv_1"
		m["invoke"], m["complete"], m["status"] = at(10), at(10.1), 204
		delete(m, "answer")
	})
	rep := s.check(t)
	if !rep.OK() {
		t.Fatalf("a deleted conversation's executions were reported:\n%s", describe(rep))
	}
}

// One idempotency key acknowledged with two executions.
func TestIdempotencyKeyTwoExecutions(t *testing.T) {
	s := cleanScenario(t)
	s.edit(t, "start1b", func(m map[string]any) {
		m["answer"] = raw(t, exec("exec_9", "conv_1", "queued", "one", 0.45, ""))
	})
	wantViolation(t, s.check(t), IdempotencyDuplicate, "", s.line(t, "start1"), s.line(t, "start1b"))
}

// A start answered 429 whose execution exists anyway (seen on the tenant
// stream), with no retry of its key acknowledged.
func TestRefusedStartExists(t *testing.T) {
	for _, status := range []float64{429, 503} {
		s := cleanScenario(t)
		s.edit(t, "refused3", func(m map[string]any) { m["status"] = status })
		s.copyAs(t, "get1", "refused3", "ghost", func(m map[string]any) {
			m["path"], m["invoke"], m["complete"] = "/v1/executions/exec_3", at(2.2), at(2.3)
			m["answer"] = raw(t, exec("exec_3", "conv_1", "cancelled", "three", 2.15, ""))
		})
		wantViolation(t, s.check(t), RefusedStartExists, "exec_3", s.line(t, "refused3"), s.line(t, "ghost"))
	}
}

// The same, but a retry with its key timed out: that retry may have made
// it, so nothing is proven.
func TestRefusedStartWithUnansweredRetryIsOpen(t *testing.T) {
	s := cleanScenario(t)
	s.copyAs(t, "refused3", "refused3", "retry3", func(m map[string]any) {
		m["status"], m["error"], m["invoke"], m["complete"] = 0, "timeout", at(2.1), at(2.15)
		delete(m, "answer")
	})
	s.copyAs(t, "get1", "retry3", "ghost", func(m map[string]any) {
		m["path"], m["invoke"], m["complete"] = "/v1/executions/exec_3", at(2.2), at(2.3)
		m["answer"] = raw(t, exec("exec_3", "conv_1", "cancelled", "three", 2.15, ""))
	})
	for _, v := range s.check(t).Violations {
		if v.Name == RefusedStartExists {
			t.Fatalf("reported although an unanswered retry may have created it: %s", v)
		}
	}
}
