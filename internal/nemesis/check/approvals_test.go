package check

import (
	"testing"
	"time"
)

// Two people's responds each answered 200: two winners.
func TestTwoPeopleWinOneAction(t *testing.T) {
	s := cleanScenario(t)
	s.copyAs(t, "respond1", "respond1", "respond1b", func(m map[string]any) { m["node"], m["client"] = "n2", "c2" })
	wantViolation(t, s.check(t), TwoWinners, "exec_1", s.line(t, "respond1"), s.line(t, "respond1b"))
}

// A standing rule answered in the commit that opened the action, and a
// person's respond was answered 200 too.
func TestRuleAndPersonBothWin(t *testing.T) {
	s := cleanScenario(t)
	for _, l := range []string{"x1.4", "c1.1.4"} {
		s.edit(t, l, func(m map[string]any) {
			m["data"].(map[string]any)["data"] = raw(t, `{"actionId":"act_1","approved":true,"decision":"approve","actor":{"kind":"rule","id":"rule_1"}}`)
		})
	}
	wantViolation(t, s.check(t), TwoWinners, "exec_1", s.line(t, "x1.4"), s.line(t, "respond1"))
}

// Two action.responded events for one action.
func TestTwoRespondedEvents(t *testing.T) {
	s := cleanScenario(t)
	s.edit(t, "x1.5", func(m map[string]any) {
		m["type"] = "action.responded"
		m["data"].(map[string]any)["data"] = raw(t, `{"actionId":"act_1","approved":false,"decision":"reject","actor":{"kind":"expiry"}}`)
	})
	s.edit(t, "c1.1.5", func(m map[string]any) {
		m["type"] = "action.responded"
		m["data"].(map[string]any)["data"] = raw(t, `{"actionId":"act_1","approved":false,"decision":"reject","actor":{"kind":"expiry"}}`)
	})
	wantViolation(t, s.check(t), TwoWinners, "exec_1", s.line(t, "x1.4"), s.line(t, "x1.5"))
}

// An expiry that approved: expiry must fail closed.
func TestExpiryThatApproves(t *testing.T) {
	s := cleanScenario(t)
	s.drop(t, "respond1")
	for _, l := range []string{"x1.4", "c1.1.4"} {
		s.edit(t, l, func(m map[string]any) {
			m["data"].(map[string]any)["data"] = raw(t, `{"actionId":"act_1","approved":true,"decision":"approve","actor":{"kind":"expiry"}}`)
		})
	}
	wantViolation(t, s.check(t), ExpiryNotClosed, "exec_1", s.line(t, "x1.4"))
}

// An expiry before the action's expiresAt.
func TestExpiryBeforeExpiresAt(t *testing.T) {
	s := cleanScenario(t)
	s.drop(t, "respond1")
	for _, l := range []string{"x1.3", "c1.1.3"} {
		s.edit(t, l, func(m map[string]any) {
			m["data"].(map[string]any)["data"].(map[string]any)["expiresAt"] = at(5).Format(time.RFC3339Nano)
		})
	}
	for _, l := range []string{"x1.4", "c1.1.4"} {
		s.edit(t, l, func(m map[string]any) {
			m["data"].(map[string]any)["data"] = raw(t, `{"actionId":"act_1","approved":false,"decision":"reject","actor":{"kind":"expiry"}}`)
		})
	}
	wantViolation(t, s.check(t), ExpiryEarly, "exec_1", s.line(t, "x1.3"), s.line(t, "x1.4"))
}

// The expiry's answer recorded without its kind (as a user named "expiry"):
// who answered is misattributed, and it is still held to fail closed.
func TestExpiryRecordedAsAUser(t *testing.T) {
	s := cleanScenario(t)
	s.drop(t, "respond1")
	for _, l := range []string{"x1.4", "c1.1.4"} {
		s.edit(t, l, func(m map[string]any) {
			m["data"].(map[string]any)["data"] = raw(t, `{"actionId":"act_1","approved":true,"decision":"approve","actor":{"id":"expiry"},"message":"No answer before the action expired at 2026-12-03T14:00:01Z"}`)
		})
	}
	rep := s.check(t)
	wantViolation(t, rep, AnswerMisattributed, "exec_1", s.line(t, "x1.4"))
	wantViolation(t, rep, ExpiryNotClosed, "exec_1", s.line(t, "x1.4"))
}

// An expiry that rejected, on a mock execution that then succeeded.
func TestExpiredMockExecutionSucceeded(t *testing.T) {
	s := cleanScenario(t)
	s.drop(t, "respond1")
	for _, l := range []string{"x1.4", "c1.1.4"} {
		s.edit(t, l, func(m map[string]any) {
			m["data"].(map[string]any)["data"] = raw(t, `{"actionId":"act_1","approved":false,"decision":"reject","actor":{"id":"expiry","kind":"expiry"},"message":"No answer before the action expired at 2026-12-03T14:00:01Z"}`)
		})
	}
	wantViolation(t, s.check(t), ExpiryNotClosed, "exec_1", s.line(t, "x1.4"))
}
