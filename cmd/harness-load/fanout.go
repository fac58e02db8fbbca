package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// subscriber is one SSE reader of the fan-out phases.
type subscriber struct {
	lastSeq    int64
	dups, gaps int
	live       int64 // events received after the approval
	lastAt     time.Time
	terminal   bool
	lags       []time.Duration
	lagSeqs    []int64 // the sequence of each lag sample
	err        error
}

// phaseFanout starts one execution that waits for approval, lets S subscribers connect (each
// has seen action.required), approves it and measures delivery to all of them: delivered
// events/s, live lag (event time → receipt), and per subscriber that every sequence arrived
// exactly once and in order up to the terminal event.
func (l *load) phaseFanout(ctx context.Context, name string, nWords, delayMs int) (*PhaseResult, error) {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.phaseTimeout)
	defer cancel()
	subscribeBase, err := l.subscribeBase()
	if err != nil {
		return nil, err
	}
	conv, err := l.client.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		return nil, err
	}
	exec, err := l.client.StartExecution(ctx, l.startReq(conv.ID, words(nWords), api.JSONObject{"delayMs": delayMs, "requireApproval": true}))
	if err != nil {
		return nil, err
	}
	actionID, err := l.waitForAction(ctx, exec.ID)
	if err != nil {
		return nil, err
	}

	s := l.cfg.subscribers
	subs := make([]*subscriber, s)
	var ready, finished sync.WaitGroup
	var connected atomic.Int64
	errs := newErrCounter()
	var approvedAt atomic.Int64 // unix nanos, 0 until approved
	var delivered atomic.Int64
	ready.Add(s)
	finished.Add(s)
	hc := &http.Client{Transport: l.hc.Transport}
	for i := range s {
		sub := &subscriber{}
		subs[i] = sub
		go func() {
			defer finished.Done()
			readyOnce := sync.OnceFunc(ready.Done)
			defer readyOnce()
			resp, err := openStream(ctx, hc, subscribeBase, exec.ID, 0)
			if err != nil {
				sub.err = err
				errs.add(err)
				return
			}
			defer resp.Body.Close()
			connected.Add(1)
			err = readSSE(resp.Body, 64<<10, func(ev wireEvent) bool {
				switch {
				case ev.seq <= sub.lastSeq:
					sub.dups++
				case ev.seq > sub.lastSeq+1:
					sub.gaps++
				}
				if ev.seq > sub.lastSeq {
					sub.lastSeq = ev.seq
				}
				if ev.typ == "action.required" {
					readyOnce()
				}
				if at := approvedAt.Load(); at != 0 && ev.received.UnixNano() >= at {
					sub.live++
					delivered.Add(1)
					sub.lastAt = ev.received
					if t, ok := eventTime(ev.data); ok {
						sub.lags = append(sub.lags, ev.received.Sub(t))
						sub.lagSeqs = append(sub.lagSeqs, ev.seq)
					}
				}
				if isTerminalType(ev.typ) {
					sub.terminal = true
					return false
				}
				return true
			})
			if err != nil && err != errStopStream && ctx.Err() == nil {
				sub.err = err
				errs.add(err)
			}
		}()
	}
	waitGroup(ctx, &ready)
	time.Sleep(200 * time.Millisecond) // let the last subscribers park on their wait
	progressf("phase %s: %d/%d subscribers connected; approving", name, connected.Load(), s)

	prog := startProgress(name, "events delivered", &delivered, errs)
	// The delivery lasts about words × delayMs (or ~1 s at saturation): profile most of it.
	profileDone := l.profile(ctx, name, max(1, nWords*delayMs*8/10/1000))
	defer profileDone()
	commits0, commitsOK := l.commitHistogram(ctx)
	t0 := time.Now()
	approvedAt.Store(t0.UnixNano())
	if _, err := l.client.RespondToAction(ctx, exec.ID, actionID, api.ActionResponse{Approved: new(true)}); err != nil {
		prog.end()
		cancel()
		finished.Wait()
		return nil, fmt.Errorf("approve: %w", err)
	}
	waitGroup(ctx, &finished)
	prog.end()
	cancel()
	finished.Wait()

	commits1, _ := l.commitHistogram(context.Background())
	final, err := l.client.ListEvents(context.Background(), exec.ID, 0, 0)
	if err != nil {
		return nil, err
	}
	total := int64(len(final.Events))
	var lags []time.Duration
	var live int64
	var lastAt time.Time
	exact := 0
	var completion latencies
	for _, sub := range subs {
		live += sub.live
		lags = append(lags, sub.lags...)
		if sub.lastAt.After(lastAt) {
			lastAt = sub.lastAt
		}
		if sub.err == nil && sub.dups == 0 && sub.gaps == 0 && sub.terminal && sub.lastSeq == total {
			exact++
		}
		if sub.terminal {
			completion.add(sub.lastAt.Sub(t0))
		}
	}
	span := lastAt.Sub(t0)
	lag := summarize(lags)
	// The lag of the first subscriber to receive each event: the commit and one delivery,
	// without the time it takes to write the event to all the others.
	first := map[int64]time.Duration{}
	for _, sub := range subs {
		for i, d := range sub.lags {
			if cur, ok := first[sub.lagSeqs[i]]; !ok || d < cur {
				first[sub.lagSeqs[i]] = d
			}
		}
	}
	firstLags := make([]time.Duration, 0, len(first))
	for _, d := range first {
		firstLags = append(firstLags, d)
	}
	firstLag := summarize(firstLags)
	var genSpan time.Duration
	if len(final.Events) > 0 {
		if t, ok := eventTime([]byte(`"time":"` + final.Events[len(final.Events)-1].Time + `"`)); ok {
			genSpan = t.Sub(t0)
		}
	}
	liveEvents := live / int64(max(1, s))
	res := &PhaseResult{
		Name:       name,
		Seconds:    span.Seconds(),
		Count:      live,
		Throughput: float64(live) / span.Seconds(),
		Unit:       "events delivered",
		Latency:    completion.summary(),
		Lag:        &lag,
		Extra: map[string]float64{
			"subscribers":          float64(s),
			"exactlyOnce":          float64(exact),
			"eventsPerExecution":   float64(total),
			"producedEventsPerSec": float64(liveEvents) / max(genSpan.Seconds(), 1e-3),
			"delayMs":              float64(delayMs),
			"firstReceiptLagP50Ms": firstLag.P50,
			"firstReceiptLagP99Ms": firstLag.P99,
			"words":                float64(nWords),
		},
		Notes: []string{
			fmt.Sprintf("%d subscribers, delayMs %d, %d-word input (%d events); %d/%d subscribers got every event exactly once, in order",
				s, delayMs, nWords, total, exact, s),
			fmt.Sprintf("lag of the first subscriber to receive each event p50 %.2f ms, p99 %.2f ms", firstLag.P50, firstLag.P99),
			"latency column: approval → terminal event received, per subscriber; lag: event time → receipt (event times have 1 ms resolution)",
		},
	}
	if commits := commits1.since(commits0); commitsOK && commits.total() > 0 {
		res.Extra["commitP50UpperMs"] = finiteMs(commits.upperBound(0.5))
		res.Extra["commitP99UpperMs"] = finiteMs(commits.upperBound(0.99))
		res.Notes = append(res.Notes, "every live event waits for its commit: "+commitNote(commits))
	}
	if subscribeBase != l.cfg.baseURL {
		res.Notes = append(res.Notes, fmt.Sprintf("execution started on %s, subscribers on %s", l.cfg.baseURL, subscribeBase))
	}
	errs.into(res)
	if exact != s && res.Errors == 0 {
		res.Errors = int64(s - exact)
		res.FirstError = "exactly-once check failed for some subscribers"
	}
	return res, nil
}

// waitForAction polls the replay until the execution's action.required is there.
func (l *load) waitForAction(ctx context.Context, executionID string) (string, error) {
	for ctx.Err() == nil {
		page, err := l.client.ListEvents(ctx, executionID, 0, 0)
		if err != nil {
			return "", err
		}
		for _, e := range page.Events {
			if e.Type == api.StandardEventTypeActionRequired {
				action, err := e.Data.AsActionRequest()
				return action.ID, err
			}
			if sdk.IsTerminalEvent(e.Type) {
				return "", fmt.Errorf("execution %s ended before asking for approval", executionID)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return "", ctx.Err()
}

// waitGroup waits for wg or ctx, whichever comes first.
func waitGroup(ctx context.Context, wg *sync.WaitGroup) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// phaseReplay replays one finished execution's events as JSON, from C clients at once. The
// body is read and counted, not decoded (decoding 1,000 events per request would measure this
