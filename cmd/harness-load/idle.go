package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// phaseIdle holds N SSE streams open on N executions awaiting approval and reports the server's
// resident memory per stream: (RSS with the streams − RSS with the executions alone) / N. Then
// it cancels every execution (each stream ends with run.cancelled).
func (l *load) phaseIdle(ctx context.Context) (*PhaseResult, error) {
	n := l.cfg.idleStreams
	ctx, cancel := context.WithTimeout(ctx, 2*l.cfg.phaseTimeout)
	defer cancel()
	before := l.memory(ctx, "before", true)

	// 1. N executions, each waiting for an approval.
	conv, err := l.client.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		return nil, err
	}
	ids := make([]string, n)
	var started atomic.Int64
	errs := newErrCounter()
	prog := startProgress("idle", "executions awaiting approval", &started, errs)
	l.parallel(ctx, n, l.cfg.clients, func(i int) {
		exec, err := l.client.StartExecution(ctx, l.startReq(conv.ID, "idle", api.JSONObject{"delayMs": 0, "requireApproval": true}))
		if err != nil {
			errs.add(err)
			return
		}
		ids[i] = exec.ID
		started.Add(1)
	})
	prog.end()
	time.Sleep(time.Second)
	withExecutions := l.memory(ctx, "executions awaiting approval", true)

	// 2. One SSE stream per execution, each on its own connection, held until its
	// execution ends. A stream counts as open once it has received action.required.
	transport := &http.Transport{
		Proxy:              nil,
		DialContext:        spreadSources(n),
		DisableKeepAlives:  true,
		DisableCompression: true,
		WriteBufferSize:    1 << 10,
		ReadBufferSize:     1 << 10,
	}
	defer transport.CloseIdleConnections()
	hc := &http.Client{Transport: transport}
	var open atomic.Int64
	var holding atomic.Bool     // the streams are all open and held idle
	var heartbeats atomic.Int64 // streams that received a heartbeat while held
	var ended sync.WaitGroup
	var lat latencies
	streamCtx, stopStreams := context.WithCancel(ctx)
	defer stopStreams()
	prog = startProgress("idle", "streams open", &open, errs)
	start := time.Now()
	l.parallel(ctx, n, 64, func(i int) {
		if ids[i] == "" {
			return
		}
		t0 := time.Now()
		resp, err := openStream(streamCtx, hc, l.cfg.baseURL, ids[i], 0)
		if err != nil {
			errs.add(err)
			return
		}
		opened := make(chan struct{})
		ended.Go(func() {
			defer resp.Body.Close()
			once := sync.OnceFunc(func() { close(opened) })
			defer once()
			counted := false
			err := readSSEWithComments(resp.Body, 1<<10, func(ev wireEvent) bool {
				if ev.typ == "action.required" {
					once()
				}
				return !isTerminalType(ev.typ)
			}, func() {
				// A heartbeat while held idle: counted once per stream.
				if holding.Load() && !counted {
					counted = true
					heartbeats.Add(1)
				}
			})
			if err != nil && err != errStopStream && streamCtx.Err() == nil {
				errs.add(err)
			}
		})
		select {
		case <-opened:
			lat.add(time.Since(t0))
			open.Add(1)
		case <-ctx.Done():
		}
	})
	openSecs := time.Since(start).Seconds()
	prog.end()
	// Let the streams settle into their idle wait, for -idle-hold: by default past the server's
	// default heartbeat interval (15 s), so the memory is that of streams idle for a while (a
	// stream that waited a heartbeat interval gives back its frame buffer), and every stream
	// should have received a heartbeat.
	holding.Store(true)
	progressf("phase idle: holding %d streams open for %s (-idle-hold)", open.Load(), l.cfg.idleHold)
	time.Sleep(max(2*time.Second, l.cfg.idleHold))
	holding.Store(false)
	withStreams := l.memory(ctx, "streams open", true)
	opened := open.Load()
	progressf("phase idle: %d streams open; server VmRSS %.0f MiB (%.0f MiB with the executions alone)", opened, withStreams.VmRSSMiB, withExecutions.VmRSSMiB)

	// 3. Cancel everything; each stream ends with run.cancelled.
	var cancelled atomic.Int64
	prog = startProgress("idle", "executions cancelled", &cancelled, errs)
	l.parallel(ctx, n, l.cfg.clients, func(i int) {
		if ids[i] == "" {
			return
		}
		if _, err := l.client.CancelExecution(ctx, ids[i], api.CancelExecutionRequest{}); err != nil {
			errs.add(err)
			return
		}
		cancelled.Add(1)
	})
	prog.end()
	endWait, stopWait := context.WithTimeout(ctx, 30*time.Second)
	waitGroup(endWait, &ended)
	stopWait()
	stopStreams()
	ended.Wait()
	transport.CloseIdleConnections()
	time.Sleep(time.Second)
	after := l.memory(ctx, "after cancelling", true)

	perStreamKiB := 0.0
	heapPerStreamKiB := 0.0
	stackPerStreamKiB := 0.0
	if opened > 0 {
		perStreamKiB = (withStreams.VmRSSMiB - withExecutions.VmRSSMiB) * 1024 / float64(opened)
		heapPerStreamKiB = (withStreams.HeapLiveMiB - withExecutions.HeapLiveMiB) * 1024 / float64(opened)
		stackPerStreamKiB = (withStreams.StackMiB - withExecutions.StackMiB) * 1024 / float64(opened)
	}
	res := &PhaseResult{
		Name:       "idle",
		Seconds:    openSecs,
		Count:      opened,
		Throughput: float64(opened) / openSecs,
		Unit:       "streams opened",
		Latency:    lat.summary(),
		Extra: map[string]float64{
			"streams":                float64(opened),
			"serverVmRSSMiB":         withStreams.VmRSSMiB,
			"rssPerStreamKiB":        perStreamKiB,
			"heapPerStreamKiB":       heapPerStreamKiB,
			"stackPerStreamKiB":      stackPerStreamKiB,
			"streamsWithHeartbeat":   float64(heartbeats.Load()),
			"holdSeconds":            max(2*time.Second, l.cfg.idleHold).Seconds(),
			"rssPerExecutionKiB":     (withExecutions.VmRSSMiB - before.VmRSSMiB) * 1024 / float64(max(1, started.Load())),
			"serverVmRSSAfterMiB":    after.VmRSSMiB,
			"executionsAwaitingSent": float64(started.Load()),
		},
		Series: []MemorySample{before, withExecutions, withStreams, after},
		Notes: []string{fmt.Sprintf("%d SSE streams on %d executions awaiting approval: server VmRSS %.0f MiB in all, %.1f KiB per stream (%.1f KiB of Go heap, %.1f KiB of goroutine stack); latency column: stream open → action.required received",
			opened, started.Load(), withStreams.VmRSSMiB, perStreamKiB, heapPerStreamKiB, stackPerStreamKiB),
			fmt.Sprintf("held idle %.0f s before measuring: %d of %d streams received a heartbeat meanwhile", max(2*time.Second, l.cfg.idleHold).Seconds(), heartbeats.Load(), opened)},
	}
	errs.into(res)
	return res, nil
}

// streamsPerSource bounds the connections dialled from one loopback source address: one source
// address has about 28,000 ephemeral ports towards one server address and port (Linux's default
// ip_local_port_range), short of 100,000 streams.
const streamsPerSource = 20000

// spreadSources dials n connections from enough loopback source addresses (127.0.0.1, .2, …:
// all of 127.0.0.0/8 is the loopback interface on Linux) that none runs out of ports.
func spreadSources(n int) func(ctx context.Context, network, addr string) (net.Conn, error) {
	sources := max(1, (n+streamsPerSource-1)/streamsPerSource)
	var next atomic.Uint64
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := net.Dialer{Timeout: 10 * time.Second}
		if sources > 1 {
			host, _, err := net.SplitHostPort(addr)
			if ip := net.ParseIP(host); err == nil && ip != nil && ip.To4() != nil && ip.IsLoopback() {
				i := next.Add(1) % uint64(sources)
				d.LocalAddr = &net.TCPAddr{IP: net.IPv4(127, 0, byte(i/250), byte(1+i%250))}
			}
		}
		return d.DialContext(ctx, network, addr)
	}
}

// parallel runs fn(0..n-1) on `workers` goroutines, stopping early when ctx ends.
func (l *load) parallel(ctx context.Context, n, workers int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		})
	}
	wg.Wait()
}

// phaseHistory runs many more executions (e2e style) and samples the server's memory ten times
// along the way: what the runtime keeps in memory must not grow with the executions it stored.
func (l *load) phaseHistory(ctx context.Context) (*PhaseResult, error) {
	total := l.cfg.historyExecs
	step := int64(max(1, total/10))
	var mu sync.Mutex
	series := []MemorySample{l.memory(ctx, "start", true)}
	samples := make(chan int64, 16)
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for done := range samples {
			s := l.memory(ctx, fmt.Sprintf("after %d", done), true)
			s.Executions = done
			mu.Lock()
			series = append(series, s)
			mu.Unlock()
		}
	})
	loop, elapsed := l.runExecutions(ctx, "history", total, l.cfg.historyLimit, func(done int64) {
		if done%step == 0 {
			select {
			case samples <- done:
			default:
			}
		}
	})
	close(samples)
	sampler.Wait()
	time.Sleep(time.Second)
	end := l.memory(ctx, "end (idle)", true)
	end.Executions = loop.completed.Load()
	series = append(series, end)
	n := loop.completed.Load()
	first, last := series[0], series[len(series)-1]
	if len(series) > 2 {
		first = series[1] // the first sample under load, comparable with the later ones
	}
	res := &PhaseResult{
		Name:       "history",
		Seconds:    elapsed.Seconds(),
		Count:      n,
		Throughput: float64(n) / elapsed.Seconds(),
		Unit:       "executions",
		Latency:    loop.lat.summary(),
		Series:     series,
		Extra: map[string]float64{
			"heapFirstMiB":    first.HeapLiveMiB,
			"heapLastMiB":     last.HeapLiveMiB,
			"rssAnonFirstMiB": first.RssAnonMiB,
			"rssAnonLastMiB":  last.RssAnonMiB,
			"vmRSSLastMiB":    last.VmRSSMiB,
		},
		Notes: []string{fmt.Sprintf("%d executions (e2e style, %d clients), server memory sampled every %d: Go heap after GC %.1f → %.1f MiB, anonymous RSS %.0f → %.0f MiB, VmRSS (includes the mapped store file) %.0f MiB at the end",
			n, l.cfg.clients, step, first.HeapLiveMiB, last.HeapLiveMiB, first.RssAnonMiB, last.RssAnonMiB, last.VmRSSMiB)},
	}
	loop.errs.into(res)
	return res, nil
}
