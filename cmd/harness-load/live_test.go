package main

import (
	"context"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/internal/loopback"
)

// The live phase against a real runtime (bbolt in a temporary directory, HTTP over loopback):
// every execution it starts is followed by each of its readers to the terminal event, exactly
// once and in order, and the figures count what the readers got — every event of every reader,
// each with a lag — so that a ratio of CPU per event compares like with like.
func TestLivePhaseFollowsEveryExecutionWithEveryReader(t *testing.T) {
	url := loopback.Serve(t, nil)

	cfg := config{baseURL: url, provider: mock.ID, phaseTimeout: time.Minute,
		liveExecs: 3, liveWords: 4, liveDelay: 1, liveSubs: 2, liveDuration: 200 * time.Millisecond}
	res, err := newLoad(cfg).phaseLive(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 {
		t.Fatalf("%d errors, first: %s", res.Errors, res.FirstError)
	}
	execs := int64(res.Extra["executions"])
	const events = 4 + 5 // a delta per word and the prefix's, queued, started, done, completed
	if execs < 3 || res.Extra["eventsPerExecution"] != events {
		t.Fatalf("%d executions of %.1f events, want at least one per client, of %d events", execs, res.Extra["eventsPerExecution"], events)
	}
	if got := int64(res.Extra["exactlyOnceReaders"]); got != 2*execs {
		t.Fatalf("%d readers got every event exactly once, want %d", got, 2*execs)
	}
	if res.Count != 2*events*execs || int64(res.Lag.Count) != res.Count {
		t.Fatalf("delivered %d events with %d lags, want %d of each", res.Count, res.Lag.Count, 2*events*execs)
	}
}
