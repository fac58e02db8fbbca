package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/internal/loopback"
)

// The streams phase against a real runtime (bbolt in a temporary directory, HTTP over
// loopback): every subscriber of a kind gets the same events, none twice or out of order, each
// with a lag; the lag's parts (first receipt, fan-out spread) come from the same receipts, and
// the figures the bench's table reads are all there.
func TestStreamsPhaseDeliversEveryEntryOnceAndSplitsTheLag(t *testing.T) {
	url := loopback.Serve(t, nil)
	restore := setStreamsFlags(t, 3, 4, 2, 300*time.Millisecond, 100*time.Millisecond, 50)
	defer restore()

	cfg := config{baseURL: url, provider: mock.ID, phaseTimeout: time.Minute, clients: 4, serverPID: os.Getpid()}
	res, err := newLoad(cfg).phaseStreams(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 {
		t.Fatalf("%d errors, first: %s", res.Errors, res.FirstError)
	}
	if res.Extra["duplicates"] != 0 || res.Extra["outOfOrder"] != 0 {
		t.Fatalf("%v duplicates, %v out of order", res.Extra["duplicates"], res.Extra["outOfOrder"])
	}
	if res.Count == 0 || int64(res.Lag.Count) != res.Count {
		t.Fatalf("delivered %d events with %d lags, want some, each with its lag", res.Count, res.Lag.Count)
	}
	if first := res.Extra["firstReceiptLagP99Ms"]; first > res.Lag.Max {
		t.Fatalf("first receipt p99 %.3f ms above the largest lag %.3f ms", first, res.Lag.Max)
	}
	for _, k := range []string{"serverCpuUsPerDeliveredEvent", "serverCpuCoresBusyWithSubs", "loadCpuUsPerDeliveredEvent",
		"loadCpuCoresBusyWithSubs", "loadSchedDelayP99Ms", "fanoutSpreadP99Ms", "serverWriteSyscallsPerDeliveredEvent"} {
		if _, ok := res.Extra[k]; !ok {
			t.Errorf("no %s in %v", k, res.Extra)
		}
	}
}

// setStreamsFlags sets the streams phase's flags for a test and returns what puts them back.
func setStreamsFlags(t *testing.T, tenant, conv, busy int, duration, idleHold time.Duration, rate float64) (restore func()) {
	t.Helper()
	old := []any{*tenantSubscribers, *convSubscribers, *busyClients, *streamsDuration, *streamsIdleHold, *streamsRate}
	*tenantSubscribers, *convSubscribers, *busyClients = tenant, conv, busy
	*streamsDuration, *streamsIdleHold, *streamsRate = duration, idleHold, rate
	return func() {
		*tenantSubscribers, *convSubscribers, *busyClients = old[0].(int), old[1].(int), old[2].(int)
		*streamsDuration, *streamsIdleHold, *streamsRate = old[3].(time.Duration), old[4].(time.Duration), old[5].(float64)
	}
}
