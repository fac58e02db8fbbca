package a2a_test

import (
	"encoding/json"
	"testing"
)

// An agent that reports the task's usage in its status updates' metadata (key "usage"): the
// execution carries the last report, and each report that changed is on the stream.
func (s *suite) usageFromMetadata(t *testing.T) {
	res, _ := s.run(t, "usage 3", nil)
	if !res.Succeeded() {
		t.Fatalf("result = %s", res.Execution.State)
	}
	got, _ := json.Marshal(res.Execution.Usage)
	if want := `{"cost":{"amount":"0.003","currency":"USD"},"inputTokens":30,"outputTokens":6,"totalTokens":36}`; string(got) != want {
		t.Fatalf("usage = %s, want %s", got, want)
	}
	reports := 0
	for _, e := range s.events(t, res.Execution.ID) {
		data, _ := e.Data.AsProviderEventData()
		if e.Type == "provider.event" && data["provider"] == "harness" && data["type"] == "usage" {
			reports++
		}
	}
	if reports != 3 {
		t.Errorf("%d usage events, want 3 (one per step)", reports)
	}
}
