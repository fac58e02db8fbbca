package check

import (
	"fmt"
	"testing"
	"time"
)

// The clean scenario with conv_1 deleted after both its executions ended: a DELETE on n2
// invoked at 7.0 and answered 200 at 7.1 (the acknowledgement), and the final reads of its
// executions answering 404 on both nodes, as they must.
func deletedScenario(t *testing.T) *scenario {
	s := cleanScenario(t)
	goneAtTheEnd(t, s)
	s.copyAs(t, "conv1", "t.2.3", "delete", func(m map[string]any) {
		m["op"], m["method"], m["path"], m["conversationId"], m["node"] = "deleteConversation", "DELETE", "/v1/conversations/conv_1", "conv_1", "n2"
		m["invoke"], m["complete"], m["t"], m["status"] = at(7.0), at(7.1), at(7.1), 200
		m["answer"] = raw(t, `{"conversationId":"conv_1","deletedAt":"2026-12-03T14:00:07.05Z","executions":2}`)
		delete(m, "body")
	})
	return s
}

// goneAtTheEnd makes every final read of conv_1's executions answer 404.
func goneAtTheEnd(t *testing.T, s *scenario) {
	for _, l := range []string{"final1.n1", "final1.n2", "final2.n1", "final2.n2"} {
		s.edit(t, l, func(m map[string]any) {
			m["status"], m["state"] = 404, ""
			delete(m, "snapshot")
		})
	}
}

// marker is a conversation.deleted message of conv_1 received on subscription sub of kind.
func marker(kind, sub, scope string, when float64) string {
	return fmt.Sprintf(`{"kind":"event","t":%q,"stream":%q,"subscription":%q,"scope":%q,"node":"n1","cursor":"40","executionId":"","sequence":0,"type":"conversation.deleted","data":{"type":"conversation.deleted","conversationId":"conv_1","time":%q,"executions":2}}`,
		at(when).Format(time.RFC3339Nano), kind, sub, scope, at(when-0.01).Format(time.RFC3339Nano))
}

func TestDeletedScenarioPasses(t *testing.T) {
	s := deletedScenario(t)
	s.insertAfter(t, "delete", "marker", marker("tenant", "t1", "a", 7.2))
	if rep := s.check(t); !rep.OK() {
		t.Fatalf("a clean deletion was reported:\n%s", describe(rep))
	}
}

// A read of one of its executions that began after the delete's acknowledgement, answered 200.
func TestExecutionReadableAfterDelete(t *testing.T) {
	s := deletedScenario(t)
	s.copyAs(t, "get3", "delete", "late", func(m map[string]any) {
		m["invoke"], m["complete"], m["t"] = at(7.3), at(7.4), at(7.4)
	})
	wantViolation(t, s.check(t), DeletedStillReadable, "exec_1", s.line(t, "delete"), s.line(t, "late"))
}

// … unless it began before the acknowledgement (it may have been served before the erasure).
func TestReadOverlappingTheDeleteMayAnswer(t *testing.T) {
	s := deletedScenario(t)
	s.copyAs(t, "get3", "delete", "overlapping", func(m map[string]any) {
		m["invoke"], m["complete"], m["t"] = at(7.05), at(7.4), at(7.4)
	})
	if rep := s.check(t); !rep.OK() {
		t.Fatalf("a read that began before the acknowledgement was reported:\n%s", describe(rep))
	}
}

// The conversation itself read after the acknowledgement, answered 200 (a final read too).
func TestConversationReadableAfterDelete(t *testing.T) {
	s := deletedScenario(t)
	s.copyAs(t, "conv1", "delete", "getConv", func(m map[string]any) {
		m["op"], m["method"], m["path"], m["conversationId"] = "getConversation", "GET", "/v1/conversations/conv_1", "conv_1"
		m["invoke"], m["complete"], m["t"], m["status"] = at(8), at(8.1), at(8.1), 200
		delete(m, "body")
	})
	wantViolation(t, s.check(t), DeletedStillReadable, "", s.line(t, "delete"), s.line(t, "getConv"))
}

// A stream of one of its executions opened after the acknowledgement delivered events.
func TestStreamOpenedAfterDeleteDelivers(t *testing.T) {
	s := deletedScenario(t)
	s.copyAs(t, "x1.7", "delete", "lateStream", func(m map[string]any) {
		m["subscription"], m["resumedFrom"], m["opened"], m["t"] = "s9", "", at(7.5), at(7.6)
	})
	wantViolation(t, s.check(t), DeletedStillReadable, "exec_1", s.line(t, "delete"), s.line(t, "lateStream"))
}

// A start into the conversation sent after the acknowledgement and answered 202.
func TestStartAfterDeleteAcknowledged(t *testing.T) {
	s := deletedScenario(t)
	s.copyAs(t, "start2", "delete", "lateStart", func(m map[string]any) {
		m["invoke"], m["complete"], m["t"] = at(7.2), at(7.3), at(7.3)
		m["body"] = raw(t, `{"conversationId":"conv_1","providerId":"mock","input":"late","idempotencyKey":"k9"}`)
		m["answer"] = raw(t, exec("exec_9", "conv_1", "queued", "late", 7.25, ""))
	})
	wantViolation(t, s.check(t), StartAfterDelete, "exec_9", s.line(t, "delete"), s.line(t, "lateStart"))
}

// A start racing the delete (sent before its acknowledgement) may be acknowledged: it
// committed before the erasure, which took it along.
func TestStartRacingTheDeleteMayBeAcknowledged(t *testing.T) {
	s := deletedScenario(t)
	s.copyAs(t, "start2", "delete", "racing", func(m map[string]any) {
		m["invoke"], m["complete"], m["t"] = at(6.95), at(7.3), at(7.3)
		m["body"] = raw(t, `{"conversationId":"conv_1","providerId":"mock","input":"racing","idempotencyKey":"k9"}`)
		m["answer"] = raw(t, exec("exec_9", "conv_1", "cancelled", "racing", 7.0, ""))
	})
	if rep := s.check(t); !rep.OK() {
		t.Fatalf("a start racing the delete was reported:\n%s", describe(rep))
	}
}

// A delete answered 409 CONVERSATION_BUSY naming an execution that had ended before the
// delete was sent; one naming an execution that was still being cancelled is fine.
func TestDeleteBusyWhileIdle(t *testing.T) {
	s := cleanScenario(t)
	busy := func(label string, from float64, named string) {
		s.copyAs(t, "conv1", "t.2.3", label, func(m map[string]any) {
			m["op"], m["method"], m["path"], m["conversationId"] = "deleteConversation", "DELETE", "/v1/conversations/conv_1", "conv_1"
			m["invoke"], m["complete"], m["t"], m["status"] = at(from), at(from+0.1), at(from+0.1), 409
			m["answer"] = raw(t, fmt.Sprintf(`{"code":"CONVERSATION_BUSY","message":"busy","details":{"conversationId":"conv_1","executionIds":[%q]}}`, named))
			delete(m, "body")
		})
	}
	busy("whileCancelling", 6.55, "exec_2")
	if rep := s.check(t); !rep.OK() {
		t.Fatalf("409 while exec_2 was being cancelled was reported:\n%s", describe(rep))
	}
	busy("idle", 7.0, "exec_1")
	wantViolation(t, s.check(t), DeleteBusyWhileIdle, "exec_1", s.line(t, "idle"), s.line(t, "x1.7")) // its terminal event, first seen
}

// The deletion marker on a tenant stream is no gap; an event of the deleted conversation's
// executions after it on the same stream is a violation.
func TestEventAfterDeletionMarker(t *testing.T) {
	s := deletedScenario(t)
	s.edit(t, "delete", func(m map[string]any) { // sent while exec_2 ran, with cancel
		m["invoke"], m["path"] = at(6.12), "/v1/conversations/conv_1?cancel=true"
	})
	s.insertAfter(t, "t.2.2", "marker", marker("tenant", "t1", "a", 6.15))
	wantViolation(t, s.check(t), EventAfterDeletion, "exec_2", s.line(t, "marker"), s.line(t, "t.2.3"))
}

// A marker for a conversation no client asked to delete.
func TestDeletionNobodyAskedFor(t *testing.T) {
	s := cleanScenario(t)
	s.insertAfter(t, "t.2.3", "marker", marker("tenant", "t1", "a", 6.9))
	wantViolation(t, s.check(t), DeletionUnasked, "", s.line(t, "marker"))
}

// A delete that got no answer may have erased the conversation: its executions missing at
// the end are excused when the conversation's final read answers 404 — and not when it
// answers 200.
func TestUnansweredDeleteResolvedByTheFinalRead(t *testing.T) {
	s := deletedScenario(t)
	s.edit(t, "delete", func(m map[string]any) {
		m["status"], m["error"] = 0, "EOF"
		delete(m, "answer")
	})
	finalConv := func(status int) {
		s.copyAs(t, "usage", "usage", "finalConv", func(m map[string]any) {
			m["op"], m["path"], m["conversationId"], m["status"] = "getConversation", "/v1/conversations/conv_1", "conv_1", status
			m["answer"] = raw(t, `{"id":"conv_1","busyPolicy":"enqueue"}`)
		})
	}
	finalConv(404)
	if rep := s.check(t); !rep.OK() {
		t.Fatalf("an unanswered delete whose conversation is gone was reported:\n%s", describe(rep))
	}
	s.drop(t, "finalConv")
	finalConv(200)
	wantViolation(t, s.check(t), StartMissing, "exec_1", s.line(t, "start1"))
}

// A 404 read that ended before any delete was sent is still a stale read.
func TestNotFoundBeforeTheDeleteIsStale(t *testing.T) {
	s := deletedScenario(t)
	s.copyAs(t, "get3", "get3", "stale", func(m map[string]any) {
		m["invoke"], m["complete"], m["t"], m["status"] = at(6.4), at(6.45), at(6.45), 404
		m["answer"] = raw(t, `{"code":"NOT_FOUND","message":"Execution not found"}`)
	})
	wantViolation(t, s.check(t), StaleRead, "exec_1", s.line(t, "stale"))
}

// A deleted execution whose usage no view showed makes the total a lower bound, not a
// mismatch (its usage is in the total, not in any view) — when it may have reported usage.
func TestDeletedExecutionsUnseenUsage(t *testing.T) {
	s := deletedScenario(t)
	for _, l := range []string{"start1", "start1b"} {
		s.edit(t, l, func(m map[string]any) {
			m["body"].(map[string]any)["config"] = raw(t, `{"usage":{"inputTokens":15,"outputTokens":15}}`)
		})
	}
	hideUsage(t, s)
	rep := s.check(t)
	if !rep.OK() {
		t.Fatalf("a deleted execution's unseen usage was reported:\n%s", describe(rep))
	}
}

// A deleted mock execution started without config.usage reported none: the total stays exact,
// and one that says it used 30 tokens is a mismatch.
func TestDeletedMockExecutionWithoutUsageStaysExact(t *testing.T) {
	s := deletedScenario(t)
	hideUsage(t, s)
	wantViolation(t, s.check(t), UsageSumMismatch, "", s.line(t, "usage"))
}

// hideUsage takes exec_1's usage out of every view but the final usage total.
func hideUsage(t *testing.T, s *scenario) {
	for _, l := range []string{"x1.5", "c1.1.5"} {
		s.edit(t, l, func(m map[string]any) {
			m["type"] = "output.text.delta"
			m["data"].(map[string]any)["type"] = "output.text.delta"
			m["data"].(map[string]any)["data"] = raw(t, `{"text":"d"}`)
		})
	}
	s.drop(t, "get3")
}

// A start answered 409 "being deleted" (the seal of a delete with ?cancel=true) while no such
// delete of its conversation had been sent; after one was, the answer is right.
func TestSealedWithoutADelete(t *testing.T) {
	s := cleanScenario(t)
	sealed := func(label string, from float64) {
		s.copyAs(t, "refused3", "t.2.3", label, func(m map[string]any) {
			m["invoke"], m["complete"], m["t"], m["status"] = at(from), at(from+0.1), at(from+0.1), 409
			m["body"] = raw(t, `{"conversationId":"conv_1","providerId":"mock","input":"sealed","idempotencyKey":"k8"}`)
			m["answer"] = raw(t, `{"code":"CONVERSATION_BUSY","message":"Conversation conv_1 is being deleted","details":{"conversationId":"conv_1","executionIds":[],"deleting":true}}`)
		})
	}
	sealed("early", 6.9)
	s.copyAs(t, "conv1", "early", "delete", func(m map[string]any) {
		m["op"], m["method"], m["path"], m["conversationId"] = "deleteConversation", "DELETE", "/v1/conversations/conv_1?cancel=true", "conv_1"
		m["invoke"], m["complete"], m["t"], m["status"] = at(7.0), at(7.5), at(7.5), 0
		m["error"] = "EOF"
		delete(m, "answer")
		delete(m, "body")
	})
	sealed("during", 7.2)
	rep := s.check(t)
	wantViolation(t, rep, SealedWithoutDelete, "", s.line(t, "early"))
	if names := rep.Names(); len(rep.Violations) != 1 {
		t.Fatalf("want the early start alone, got %v:\n%s", names, describe(rep))
	}
	s.drop(t, "early")
	if rep := s.check(t); !rep.OK() {
		t.Fatalf("a start sealed while a delete with cancel was under way was reported:\n%s", describe(rep))
	}
}
