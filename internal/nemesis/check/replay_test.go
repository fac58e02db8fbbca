package check

import (
	"fmt"
	"testing"
	"time"
)

// replayOf is exec_1's log as a JSON replay answers it, with the given
// sequences and types.
func replayOf(t *testing.T, types map[int]string, seqs ...int) any {
	var events []string
	for _, q := range seqs {
		events = append(events, fmt.Sprintf(`{"id":"exec_1:%d","executionId":"exec_1","sequence":%d,"type":%q,"time":%q,"data":{}}`, q, q, types[q], at(6).Format(time.RFC3339Nano)))
	}
	body := `{"events":[`
	for i, e := range events {
		if i > 0 {
			body += ","
		}
		body += e
	}
	return raw(t, body+`],"nextCursor":`+fmt.Sprint(seqs[len(seqs)-1])+`}`)
}

var exec1Types = map[int]string{1: "run.queued", 2: "run.started", 3: "action.required", 4: "action.responded", 5: "provider.event", 6: "output.text.done", 7: "run.completed", 8: "run.failed"}

// withFinalReplay adds a final read of exec_1's whole log.
func withFinalReplay(t *testing.T, seqs ...int) *scenario {
	s := cleanScenario(t)
	s.copyAs(t, "get3", "final2.n2", "replay", func(m map[string]any) {
		m["op"], m["path"], m["final"], m["client"], m["executionId"] = "events", "/v1/executions/exec_1/events", true, "final", "exec_1"
		m["invoke"], m["complete"] = at(21.6), at(21.7)
		m["answer"] = replayOf(t, exec1Types, seqs...)
	})
	return s
}

func TestFinalReplayWholeLogPasses(t *testing.T) {
	if rep := withFinalReplay(t, 1, 2, 3, 4, 5, 6, 7).check(t); !rep.OK() || rep.Events != 29 {
		t.Fatalf("a whole log was reported (events %d):\n%s", rep.Events, describe(rep))
	}
}

// The log of a terminal execution without its terminal event.
func TestFinalReplayWithoutTerminalEvent(t *testing.T) {
	s := withFinalReplay(t, 1, 2, 3, 4, 5, 6)
	wantViolation(t, s.check(t), TerminalEventMissing, "exec_1", s.line(t, "replay"))
}

// A gap in the log itself.
func TestFinalReplayWithAGap(t *testing.T) {
	s := withFinalReplay(t, 1, 2, 4, 5, 6, 7)
	wantViolation(t, s.check(t), EventGap, "exec_1", s.line(t, "replay"))
}

// Two terminal events in the log.
func TestFinalReplayWithTwoTerminals(t *testing.T) {
	s := withFinalReplay(t, 1, 2, 3, 4, 5, 6, 7, 8)
	wantViolation(t, s.check(t), TwoTerminalEvents, "exec_1", s.line(t, "replay"))
}
