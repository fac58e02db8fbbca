package check

import "testing"

// Spent beyond the budget plus its slack.
func TestBudgetExceeded(t *testing.T) {
	s := cleanScenario(t)
	s.edit(t, "run", func(m map[string]any) {
		m["settings"].(map[string]any)["budgets"] = raw(t, `[{"tenant":"a","tokens":10,"slack":5}]`)
	})
	wantViolation(t, s.check(t), BudgetExceeded, "", s.line(t, "final1.n1"))
}

// GET /v1/usage disagrees with the executions' own usage: tokens.
func TestUsageTokensMismatch(t *testing.T) {
	s := cleanScenario(t)
	s.edit(t, "usage", func(m map[string]any) { m["answer"].(map[string]any)["total"].(map[string]any)["totalTokens"] = 60 })
	wantViolation(t, s.check(t), UsageSumMismatch, "", s.line(t, "usage"))
}

// … and cost.
func TestUsageCostMismatch(t *testing.T) {
	s := cleanScenario(t)
	s.edit(t, "usage", func(m map[string]any) {
		m["answer"].(map[string]any)["total"].(map[string]any)["costs"] = raw(t, `[{"amount":"0.006","currency":"USD"}]`)
	})
	wantViolation(t, s.check(t), UsageSumMismatch, "", s.line(t, "usage"))
}

// A deleted conversation's executions keep their usage in the totals.
func TestDeletedConversationKeepsUsage(t *testing.T) {
	s := cleanScenario(t)
	for _, l := range []string{"final1.n1", "final1.n2", "final2.n1", "final2.n2"} {
		s.edit(t, l, func(m map[string]any) {
			m["status"], m["state"] = 404, ""
			delete(m, "snapshot")
		})
	}
	s.copyAs(t, "conv1", "cancel2", "delete", func(m map[string]any) {
		m["op"], m["conversationId"], m["status"] = "deleteConversation", "conv_1", 204
		m["invoke"], m["complete"] = at(10), at(10.1) // after its executions ended, as deletes are now checked
		delete(m, "answer")
	})
	if rep := s.check(t); !rep.OK() {
		t.Fatalf("usage kept after a deletion was reported:\n%s", describe(rep))
	}
	s.edit(t, "usage", func(m map[string]any) { m["answer"].(map[string]any)["total"].(map[string]any)["totalTokens"] = 0 })
	wantViolation(t, s.check(t), UsageSumMismatch, "", s.line(t, "usage"))
}

// A start that got no answer may have made an execution nobody saw: the
// total may then be larger than what the views sum to, never smaller.
func TestUnansweredStartMakesUsageALowerBound(t *testing.T) {
	s := cleanScenario(t)
	s.copyAs(t, "refused3", "refused3", "lost4", func(m map[string]any) {
		m["status"], m["error"] = 0, "EOF"
		m["body"] = raw(t, `{"conversationId":"conv_1","providerId":"mock","input":"four","idempotencyKey":"k4"}`)
		delete(m, "answer")
	})
	s.edit(t, "usage", func(m map[string]any) {
		total := m["answer"].(map[string]any)["total"].(map[string]any)
		total["totalTokens"], total["executions"] = 50, 2
	})
	rep := s.check(t)
	if !rep.OK() || len(rep.Notes) != 1 {
		t.Fatalf("want a note and no violation:\n%s", describe(rep))
	}
	s.edit(t, "usage", func(m map[string]any) { m["answer"].(map[string]any)["total"].(map[string]any)["totalTokens"] = 20 })
	wantViolation(t, s.check(t), UsageSumMismatch, "", s.line(t, "usage"))
}
