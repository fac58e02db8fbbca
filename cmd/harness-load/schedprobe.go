package main

import "time"

// The streams phase's subscribers share the server's cores: a lag read at the client is the
// server's delay plus the load tool's own wait for a core. startSchedProbe measures the second
// part: one goroutine of the load tool sleeps interval again and again and records how much
// later than asked each sleep ended (the timer's slack plus the wait to be scheduled, which
// every reader goroutine of the tool waits too). When that delay's p99 is near the lag's, the
// lag is the machine's, not the server's.
func startSchedProbe(interval time.Duration) (stop func() Summary) {
	quit, done := make(chan struct{}), make(chan struct{})
	var late []time.Duration
	go func() {
		defer close(done)
		for {
			t0 := time.Now()
			time.Sleep(interval)
			late = append(late, max(0, time.Since(t0)-interval))
			select {
			case <-quit: // after a sample: a probe that ran has at least one
				return
			default:
			}
		}
	}()
	return func() Summary {
		close(quit)
		<-done
		return summarize(late)
	}
}
