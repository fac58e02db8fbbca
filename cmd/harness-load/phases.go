package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// words returns an input of n words ("w1 w2 …"): the mock emits one delta per word, plus one
// for its "Echo: " prefix.
func words(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "w%d", i+1)
	}
	return b.String()
}

func (l *load) startReq(conv, input string, config api.JSONObject) api.StartExecutionRequest {
	return api.StartExecutionRequest{ConversationID: conv, ProviderID: l.cfg.provider, Input: input, Config: config}
}

// executionLoop is the end-to-end loop shared by the e2e and history phases: clients each
// create a conversation, then start mock executions and stream each to its terminal event,
// until total executions were started or the duration is over.
type executionLoop struct {
	started, completed atomic.Int64
	events             atomic.Int64
	lat                latencies
	startLat           latencies // POST → 202
	firstEvent         latencies // POST → first event received
	errs               *errCounter
}

func (l *load) runExecutions(ctx context.Context, name string, total int, d time.Duration, sample func(done int64)) (*executionLoop, time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	loop := &executionLoop{errs: newErrCounter()}
	prog := startProgress(name, "executions", &loop.completed, loop.errs)
	defer prog.end()
	start := time.Now()
	var wg sync.WaitGroup
	for range l.cfg.clients {
		wg.Go(func() {
			conv, err := l.client.CreateConversation(ctx, api.CreateConversationRequest{})
			if err != nil {
				loop.errs.add(err)
				return
			}
			var local []time.Duration
			defer func() { loop.lat.addAll(local) }()
			for ctx.Err() == nil && loop.started.Add(1) <= int64(total) {
				t0 := time.Now()
				if err := l.oneExecution(ctx, conv.ID, loop); err != nil {
					if ctx.Err() == nil {
						loop.errs.add(err)
					}
					continue
				}
				local = append(local, time.Since(t0))
				if n := loop.completed.Add(1); sample != nil {
					sample(n)
				}
			}
		})
	}
	wg.Wait()
	return loop, time.Since(start)
}

// oneExecution starts a mock execution ({"delayMs":0}, "hello runtime": 7 events) and follows
// it to its terminal event through the SDK. With -e2e-start stream (the default) that is
// sdk.Client.Run, which starts and streams in one request where the server can (harness-edge's
// extension) and takes the final snapshot from that answer's trailer (or reads it, from a server
// or proxy that sends no trailer), as a client would; with -e2e-start separate it
// is StartExecution (POST, 202) and then the Events iterator (GET, SSE), the three-request way
// of clients that do not know the extension.
func (l *load) oneExecution(ctx context.Context, conv string, loop *executionLoop) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req := l.startReq(conv, "hello runtime", api.JSONObject{"delayMs": 0})
	t0 := time.Now()
	if l.cfg.e2eStart == e2eStartStream {
		first := true
		res, err := l.client.Run(ctx, req, sdk.RunHandlers{OnEvent: func(api.RuntimeEvent) {
			if first {
				loop.firstEvent.add(time.Since(t0))
				first = false
			}
			loop.events.Add(1)
		}})
		if err != nil {
			return err
		}
		if !res.Succeeded() {
			return fmt.Errorf("execution %s ended %s", res.Execution.ID, res.Execution.State)
		}
		return nil
	}
	exec, err := l.client.StartExecution(ctx, req)
	if err != nil {
		return err
	}
	loop.startLat.add(time.Since(t0))
	var last api.StandardEventType
	for ev, err := range l.client.Events(ctx, exec.ID, 0) {
		if err != nil {
			return err
		}
		if last == "" {
			loop.firstEvent.add(time.Since(t0))
		}
		loop.events.Add(1)
		last = ev.Type
	}
	if last != api.StandardEventTypeRunCompleted {
		return fmt.Errorf("execution %s ended with %q", exec.ID, last)
	}
	return nil
}

func (l *load) phaseE2E(ctx context.Context) (*PhaseResult, error) {
	wait := l.profile(ctx, "e2e", int(l.cfg.e2eDuration.Seconds()*0.6))
	commits0, commitsOK := l.commitHistogram(ctx)
	allocs0, allocsOK := l.allocCounters(ctx)
	cpu := startCPU(l.cfg.serverPID)
	loop, elapsed := l.runExecutions(ctx, "e2e", l.cfg.e2eMax, l.cfg.e2eDuration, nil)
	cpu.stop()
	allocs1, allocs1OK := l.allocCounters(ctx)
	commits1, _ := l.commitHistogram(ctx)
	wait()
	n := loop.completed.Load()
	serverUs, selfUs := cpu.per(n)
	res := &PhaseResult{
		Name:       "e2e",
		Seconds:    elapsed.Seconds(),
		Count:      n,
		Throughput: float64(n) / elapsed.Seconds(),
		Unit:       "executions",
		Latency:    loop.lat.summary(),
		Extra: map[string]float64{
			"eventsPerSecond":        float64(loop.events.Load()) / elapsed.Seconds(),
			"clients":                float64(l.cfg.clients),
			"firstEventP50Ms":        loop.firstEvent.summary().P50,
			"firstEventP99Ms":        loop.firstEvent.summary().P99,
			"serverCpuUsPerExec":     serverUs,
			"loadToolCpuUsPerExec":   selfUs,
			"serverCpuCoresBusy":     cpu.Server.Seconds() / elapsed.Seconds(),
			"loadToolCpuCoresBusy":   cpu.Self.Seconds() / elapsed.Seconds(),
			"startAndStreamInOneReq": boolFloat(l.cfg.e2eStart == e2eStartStream),
		},
	}
	commits := commits1.since(commits0)
	cpuNote := fmt.Sprintf("load tool CPU %.0f µs per execution", selfUs)
	if cpu.ioOK && n > 0 {
		res.Extra["serverWriteSyscallsPerExec"] = float64(cpu.Writes) / float64(n)
		res.Extra["serverReadSyscallsPerExec"] = float64(cpu.Reads) / float64(n)
		cpuNote += fmt.Sprintf("; server system calls per execution: %.1f writes, %.1f reads", float64(cpu.Writes)/float64(n), float64(cpu.Reads)/float64(n))
		if commitsOK && commits.total() > 0 {
			// bbolt syncs twice per commit (the data pages, then the meta page); /proc counts
			// no fsyncs, so they are counted from the commits.
			res.Extra["serverFsyncsPerExec"] = 2 * commits.total() / float64(n)
			cpuNote += fmt.Sprintf(", %.2f fsyncs (2 per store commit)", 2*commits.total()/float64(n))
		}
	}
	if allocsOK && allocs1OK && n > 0 {
		objects, bytes := (allocs1.objects-allocs0.objects)/float64(n), (allocs1.bytes-allocs0.bytes)/float64(n)
		res.Extra["serverAllocsPerExec"], res.Extra["serverAllocBytesPerExec"] = objects, bytes
		cpuNote += fmt.Sprintf("; server allocations per execution: %.0f (%.1f KB)", objects, bytes/1000)
	}
	if serverUs >= 0 {
		cpuNote = fmt.Sprintf("**server CPU %.0f µs per execution** (%.2f cores busy), %s", serverUs, cpu.Server.Seconds()/elapsed.Seconds(), cpuNote)
	}
	if l.cfg.e2eStart == e2eStartStream {
		res.Notes = []string{fmt.Sprintf("%d clients; sdk Run: start and stream in one request (POST, Accept: text/event-stream) to run.completed, 7 events each, the final snapshot in its trailer (a GET without it); POST → first event p50 %.2f ms p99 %.2f ms",
			l.cfg.clients, loop.firstEvent.summary().P50, loop.firstEvent.summary().P99), cpuNote}
	} else {
		res.Extra["startP50Ms"], res.Extra["startP99Ms"] = loop.startLat.summary().P50, loop.startLat.summary().P99
		res.Notes = []string{fmt.Sprintf("%d clients; the portable way: start (POST, 202) + SSE stream (GET) to run.completed, 7 events each, through the SDK; of which POST → 202 p50 %.2f ms p99 %.2f ms, POST → first event p50 %.2f ms",
			l.cfg.clients, loop.startLat.summary().P50, loop.startLat.summary().P99, loop.firstEvent.summary().P50), cpuNote}
	}
	if commitsOK && commits.total() > 0 && n > 0 {
		res.Extra["commitsPerExecution"] = commits.total() / float64(n)
		res.Extra["commitP99UpperMs"] = finiteMs(commits.upperBound(0.99))
		res.Notes = append(res.Notes, fmt.Sprintf("%.2f store commits per execution; %s", commits.total()/float64(n), commitNote(commits)))
	}
	loop.errs.into(res)
	return res, nil
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

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
