package main

import (
	"context"
	"flag"
	"time"
)

// The streams phase at a set execution rate (issue 46's restated targets: 1,000 tenant and 200
// conversation subscribers at the highest rate the server carries under one core; 100 + 20
// through two nodes with -subscribe-url): -streams-rate caps the executions started per second
// across all clients, so the rate can be raised run by run until the phase's serverCpuCoresBusy
// reaches 1.
var streamsRate = flag.Float64("streams-rate", 0, "streams phase: executions started per second across all clients (0: as fast as the clients go)")

// startPacer hands out one start per 1/rate until ctx ends; nil (no limit) when rate ≤ 0.
func startPacer(ctx context.Context, rate float64) <-chan struct{} {
	if rate <= 0 {
		return nil
	}
	starts := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Duration(float64(time.Second) / rate))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			select {
			case starts <- struct{}{}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return starts
}

// awaitStart waits for the pacer's next start (at once without one); false when ctx ended.
func awaitStart(ctx context.Context, starts <-chan struct{}) bool {
	if starts == nil || ctx.Err() != nil {
		return ctx.Err() == nil
	}
	select {
	case <-starts:
		return true
	case <-ctx.Done():
		return false
	}
}
