package check

import (
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/internal/nemesis/history"
)

// takenOver makes exec_2 fail as node n1's takeover at 6.7, instead of
// being cancelled.
func takenOver(t *testing.T, s *scenario) {
	for _, l := range []string{"x2.3", "c1.2.3", "t.2.3"} {
		s.edit(t, l, func(m map[string]any) {
			m["type"] = "run.failed"
			m["data"].(map[string]any)["data"] = raw(t, `{"code":"PROVIDER_ERROR","message":"Node n1 stopped before the execution finished"}`)
		})
	}
	s.drop(t, "cancel2")
	for _, l := range []string{"final2.n1", "final2.n2"} {
		s.edit(t, l, func(m map[string]any) {
			m["state"] = "failed"
			m["snapshot"] = raw(t, exec("exec_2", "conv_1", "failed", "two", 6.7, `,"error":{"code":"PROVIDER_ERROR","message":"Node n1 stopped before the execution finished"}`))
		})
	}
}

// A takeover of a node no fault touched is a false takeover.
func TestFalseTakeover(t *testing.T) {
	s := cleanScenario(t)
	takenOver(t, s)
	rep := s.check(t)
	wantViolation(t, rep, FalseTakeover, "exec_2", s.line(t, "x2.3"))
	if rep.FalseTakeovers != 1 {
		t.Fatalf("counted %d false takeovers, want 1", rep.FalseTakeovers)
	}
}

// Counted, not failed, when the run says so.
func TestFalseTakeoverCounted(t *testing.T) {
	s := cleanScenario(t)
	takenOver(t, s)
	s.edit(t, "run", func(m map[string]any) { m["settings"].(map[string]any)["falseTakeovers"] = "count" })
	rep := s.check(t)
	if !rep.OK() || rep.FalseTakeovers != 1 || len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "false takeover") {
		t.Fatalf("want one counted false takeover and no violation; got %d:\n%s", rep.FalseTakeovers, describe(rep))
	}
}

// A takeover after the node was stopped (SIGSTOP) is a true one.
func TestTakeoverOfStoppedNode(t *testing.T) {
	s := cleanScenario(t)
	takenOver(t, s)
	s.insertAfter(t, "killEnd", "stop", `{"kind":"fault","t":"`+at(4).Format("2006-01-02T15:04:05Z07:00")+`","fault":"stop","target":"n1","phase":"start"}`)
	s.insertAfter(t, "stop", "cont", `{"kind":"fault","t":"`+at(5).Format("2006-01-02T15:04:05Z07:00")+`","fault":"stop","target":"n1","phase":"end"}`)
	rep := s.check(t)
	if !rep.OK() || rep.FalseTakeovers != 0 || rep.Faults["stop"] != 1 {
		t.Fatalf("a takeover of a stopped node was reported (%d):\n%s", rep.FalseTakeovers, describe(rep))
	}
}

// A history without its run line is named malformed, not silently passed.
func TestNoRunLine(t *testing.T) {
	s := cleanScenario(t)
	s.drop(t, "run")
	wantViolation(t, s.check(t), MalformedHistory, "")
	_ = history.KindRun
}

// Two request lines with one id: the history was not written by one Writer.
func TestDuplicateRequestID(t *testing.T) {
	s := cleanScenario(t)
	s.duplicate(t, "get1")
	wantViolation(t, s.check(t), MalformedHistory, "", s.line(t, "get1"), s.line(t, "get1#2"))
}
