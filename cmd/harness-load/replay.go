package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// machine's JSON decoder, on the cores the server needs); one replay is decoded through the
// SDK first to check it.
func (l *load) phaseReplay(ctx context.Context) (*PhaseResult, error) {
	setup, cancelSetup := context.WithTimeout(ctx, l.cfg.phaseTimeout)
	defer cancelSetup()
	conv, err := l.client.CreateConversation(setup, api.CreateConversationRequest{})
	if err != nil {
		return nil, err
	}
	exec, err := l.client.StartExecution(setup, l.startReq(conv.ID, words(l.cfg.replayWords), api.JSONObject{"delayMs": 0}))
	if err != nil {
		return nil, err
	}
	if _, err := l.client.WaitForTerminal(setup, exec.ID); err != nil {
		return nil, err
	}
	page, err := l.client.ListEvents(setup, exec.ID, 0, 0)
	if err != nil {
		return nil, err
	}
	nEvents := len(page.Events)
	url := fmt.Sprintf("%s/v1/executions/%s/events", l.cfg.baseURL, exec.ID)
	probe, err := l.get(setup, url)
	if err != nil {
		return nil, err
	}
	size := int64(len(probe))

	ctx, cancel := context.WithTimeout(ctx, l.cfg.replayDur)
	defer cancel()
	var done, bytesRead atomic.Int64
	var claimed atomic.Int64
	errs := newErrCounter()
	var lat latencies
	prog := startProgress("replay", "replays", &done, errs)
	start := time.Now()
	profileDone := l.profile(ctx, "replay", int(l.cfg.replayDur.Seconds()*0.6))
	defer profileDone()
	var wg sync.WaitGroup
	for range l.cfg.clients {
		wg.Go(func() {
			var local []time.Duration
			defer func() { lat.addAll(local) }()
			for ctx.Err() == nil && claimed.Add(1) <= int64(l.cfg.replayMax) {
				t0 := time.Now()
				n, err := l.replayOnce(ctx, url)
				if err != nil {
					if ctx.Err() == nil {
						errs.add(err)
					}
					continue
				}
				if n != size {
					errs.add(fmt.Errorf("replay returned %d bytes, expected %d", n, size))
					continue
				}
				local = append(local, time.Since(t0))
				bytesRead.Add(n)
				done.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	prog.end()
	n := done.Load()
	res := &PhaseResult{
		Name:       "replay",
		Seconds:    elapsed.Seconds(),
		Count:      n,
		Throughput: float64(n) / elapsed.Seconds(),
		Unit:       "replays",
		Latency:    lat.summary(),
		Extra: map[string]float64{
			"MBPerSecond":     float64(bytesRead.Load()) / elapsed.Seconds() / 1e6,
			"eventsPerReplay": float64(nEvents),
			"bytesPerReplay":  float64(size),
			"clients":         float64(l.cfg.clients),
		},
		Notes: []string{fmt.Sprintf("%d clients; GET …/events (JSON) of a finished %d-word execution: %d events, %d bytes each",
			l.cfg.clients, l.cfg.replayWords, nEvents, size)},
	}
	errs.into(res)
	return res, nil
}

func (l *load) replayOnce(ctx context.Context, url string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := l.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return n, err
	}
	if resp.StatusCode != http.StatusOK {
		return n, fmt.Errorf("replay: %s", resp.Status)
	}
	return n, nil
}
