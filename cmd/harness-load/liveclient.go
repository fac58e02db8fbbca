package main

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// One live execution as a portable client runs it, in raw HTTP (no SDK: what a browser or a
// curl script does, and what the reference's clients do): POST /v1/executions asking for JSON
// (202), then at once GET its event stream as SSE, from -live-subscribers readers, each to the
// terminal event.

// liveTally is what one execution's readers saw.
type liveTally struct {
	delivered int64           // events received, all readers
	produced  int64           // the execution's events (the highest sequence seen)
	exact     int             // readers that got every sequence once, in order, to the terminal event
	lags      []time.Duration // event time → receipt, every event of every reader
}

// startLive POSTs one execution of the live phase's words and returns its id.
func (l *load) startLive(ctx context.Context, conv string) (string, error) {
	return l.startRaw(ctx, conv, words(l.cfg.liveWords), l.cfg.liveDelay)
}

// followLive reads the execution's stream from n readers opened at once, each to its terminal
// event.
func (l *load) followLive(ctx context.Context, id string, n int) (liveTally, error) {
	var (
		mu    sync.Mutex
		tally liveTally
		first error
		wg    sync.WaitGroup
	)
	for range n {
		wg.Go(func() {
			var lastSeq int64
			ok, terminal := true, false
			var lags []time.Duration
			var delivered int64
			resp, err := openStream(ctx, l.hc, l.cfg.baseURL, id, 0)
			if err == nil {
				err = readSSE(resp.Body, 16<<10, func(ev wireEvent) bool {
					delivered++
					if ev.seq != lastSeq+1 {
						ok = false
					}
					lastSeq = max(lastSeq, ev.seq)
					if t, found := eventTime(ev.data); found {
						lags = append(lags, ev.received.Sub(t))
					}
					terminal = isTerminalType(ev.typ)
					return !terminal
				})
				resp.Body.Close()
				if err == errStopStream {
					err = nil
				}
			}
			if err == nil && !terminal {
				err = fmt.Errorf("stream of %s ended before its terminal event (last sequence %d)", id, lastSeq)
			}
			mu.Lock()
			defer mu.Unlock()
			tally.delivered += delivered
			tally.produced = max(tally.produced, lastSeq)
			tally.lags = append(tally.lags, lags...)
			if ok && terminal && err == nil {
				tally.exact++
			}
			if err != nil && first == nil {
				first = err
			}
		})
	}
	wg.Wait()
	return tally, first
}
