package check

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// withFinalReplay adds a final read of exec_1's whole log: the events its
// execution stream showed (x1.N), and a run.failed for sequence 8.
func withFinalReplay(t *testing.T, seqs ...int) *scenario {
	s := cleanScenario(t)
	var events []any
	for _, q := range seqs {
		if q == 8 {
			events = append(events, raw(t, fmt.Sprintf(`{"id":"exec_1:8","executionId":"exec_1","sequence":8,"type":"run.failed","time":%q,"data":{}}`, at(6.1).Format(time.RFC3339Nano))))
			continue
		}
		var line map[string]any
		if err := json.Unmarshal([]byte(s.entries[s.at(t, fmt.Sprint("x1.", q))].text), &line); err != nil {
			t.Fatal(err)
		}
		events = append(events, line["data"])
	}
	s.copyAs(t, "get3", "final2.n2", "replay", func(m map[string]any) {
		m["op"], m["path"], m["final"], m["client"], m["executionId"] = "events", "/v1/executions/exec_1/events", true, "final", "exec_1"
		m["invoke"], m["complete"] = at(21.6), at(21.7)
		m["answer"] = map[string]any{"events": events, "nextCursor": seqs[len(seqs)-1]}
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
