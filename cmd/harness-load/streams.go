package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// The streams phase (issue 36's targets; docs/performance-log.md, "Conversation and tenant
// streams"): -tenant-subscribers streams of GET /v1/events?lifecycle=true and
// -conversation-subscribers streams of one busy conversation, held while e2e clients commit
// executions (-streams-busy-clients of them in that conversation), against the same e2e load
// with no subscriber just before. It reports the delivery lag (event time → receipt), the
// server's memory per idle subscriber, the write throughput and server CPU with and without
// the subscribers, and checks that every subscriber saw every event meant for it once, in order.
var (
	tenantSubscribers = flag.Int("tenant-subscribers", 1000, "streams phase: subscribers of the tenant stream (lifecycle filter)")
	convSubscribers   = flag.Int("conversation-subscribers", 200, "streams phase: subscribers of the busy conversation's stream")
	busyClients       = flag.Int("streams-busy-clients", 4, "streams phase: e2e clients that run their executions in the busy conversation")
	streamsDuration   = flag.Duration("streams-duration", 10*time.Second, "streams phase: duration of each e2e run (without, then with the subscribers)")
	// With -subscribe-url on another node, -server-pid is the executions' node and this one the
	// subscribers': the phase reports the CPU of each.
	subscribeServerPID = flag.Int("subscribe-server-pid", 0, "streams phase: pid of the server the subscribers connect to when -subscribe-url is another node (0: not reported)")
	streamsIdleHold    = flag.Duration("streams-idle-hold", 17*time.Second, "streams phase: how long the subscribers are held idle before the memory is measured (past the server's heartbeat interval, after which an idle HTTP/1.1 stream leaves net/http)")
)

func (l *load) phaseStreams(ctx context.Context) (*PhaseResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*l.cfg.phaseTimeout)
	defer cancel()
	base, err := l.subscribeBase()
	if err != nil {
		return nil, err
	}
	busy, err := l.client.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		return nil, err
	}

	// 1. The load alone.
	progressf("phase streams: e2e without subscribers for %s", *streamsDuration)
	cpu := startCPU(l.cfg.serverPID)
	alone, aloneElapsed := l.runStreamsLoad(ctx, busy.ID)
	cpu.stop()
	aloneUs, _ := cpu.per(alone.completed.Load())
	aloneRate := float64(alone.completed.Load()) / aloneElapsed.Seconds()

	// 2. The subscribers, from now, idle: memory per subscriber.
	time.Sleep(time.Second)
	memory := func(label string) MemorySample { return l.memory(ctx, label, true) }
	if *subscribeServerPID > 0 {
		// The subscribers hold their streams on another node: what they cost is that node's
		// memory (its resident set; -admin is the executions' node, so no heap figure).
		memory = func(label string) MemorySample {
			st := procStatus(*subscribeServerPID)
			return MemorySample{Label: label + " (the subscribers' node)", VmRSSMiB: st["VmRSS"], RssAnonMiB: st["RssAnon"], RssFileMiB: st["RssFile"]}
		}
	}
	before := memory("before the subscribers")
	var now struct {
		NextCursor string `json:"nextCursor"`
	}
	raw, err := l.get(ctx, base+"/v1/events?lifecycle=true")
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &now); err != nil {
		return nil, fmt.Errorf("the cursor of now: %w", err)
	}
	nT, nC := *tenantSubscribers, *convSubscribers
	subs := make([]*logSubscriber, nT+nC)
	var measuring atomic.Bool
	var open, delivered atomic.Int64
	var ready, finished sync.WaitGroup
	errs := newErrCounter()
	ready.Add(nT + nC)
	subCtx, stopSubs := context.WithCancel(ctx)
	defer stopSubs()
	for i := range subs {
		sub := &logSubscriber{}
		subs[i] = sub
		path := base + "/v1/events?lifecycle=true&after=" + url.QueryEscape(now.NextCursor)
		if i >= nT {
			path = base + "/v1/conversations/" + busy.ID + "/events?after=0"
		}
		finished.Add(1)
		go func() {
			defer finished.Done()
			readyOnce := sync.OnceFunc(ready.Done)
			defer readyOnce()
			req, _ := http.NewRequestWithContext(subCtx, http.MethodGet, path, nil)
			req.Header.Set("Accept", "text/event-stream")
			resp, err := l.hc.Do(req)
			if err != nil {
				sub.err = err
				errs.add(err)
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
				sub.err = fmt.Errorf("%s: %s", resp.Status, body)
				errs.add(sub.err)
				return
			}
			open.Add(1)
			readyOnce()
			err = readSSEWithIDs(resp.Body, func(id []byte, ev wireEvent) bool {
				pos := cursorPosition(id)
				switch {
				case pos == sub.lastPos:
					sub.dups++
				case pos < sub.lastPos:
					sub.outOfOrder++
				}
				sub.lastPos = max(sub.lastPos, pos)
				sub.events++
				if measuring.Load() {
					delivered.Add(1)
					if t, ok := eventTime(ev.data); ok {
						sub.lags.add(pos, ev.received.Sub(t))
					}
				}
				return true
			})
			if err != nil && subCtx.Err() == nil {
				sub.err = err
				errs.add(err)
			}
		}()
	}
	waitGroup(ctx, &ready)
	time.Sleep(*streamsIdleHold) // every stream parked on its wait, and past a heartbeat interval
	idle := memory("subscribers open, idle")
	progressf("phase streams: %d/%d subscribers open; e2e with them for %s", open.Load(), nT+nC, *streamsDuration)

	// 3. The same load with the subscribers.
	measuring.Store(true)
	cpu = startCPU(l.cfg.serverPID)
	subCPU := startCPU(*subscribeServerPID)
	profiled := l.profile(ctx, "streams", int(streamsDuration.Seconds()))
	stopProbe := startSchedProbe(time.Millisecond)
	with, withElapsed := l.runStreamsLoad(ctx, busy.ID)
	sched := stopProbe()
	profiled()
	cpu.stop()
	subCPU.stop()
	withUs, _ := cpu.per(with.completed.Load())
	withRate := float64(with.completed.Load()) / withElapsed.Seconds()
	// The last events reach every subscriber: wait until deliveries stop for two seconds (at
	// most a minute), so that a subscriber still behind is not counted as one that lost events.
	for last, quiet, deadline := delivered.Load(), 0, time.Now().Add(time.Minute); quiet < 4 && time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
		if now := delivered.Load(); now == last {
			quiet++
		} else {
			last, quiet = now, 0
		}
	}
	measuring.Store(false)
	stopSubs()
	finished.Wait()

	// 4. Figures and checks.
	var tenantEvents, convEvents []int64
	var dups, disorder int64
	for i, s := range subs {
		dups += s.dups
		disorder += s.outOfOrder
		if i < nT {
			tenantEvents = append(tenantEvents, s.events)
		} else {
			convEvents = append(convEvents, s.events)
		}
	}
	same := func(counts []int64) bool { return len(counts) == 0 || slices.Min(counts) == slices.Max(counts) }
	lag := allLags(subs)
	first, spread := firstReceiptAndSpread(subs)
	n := int64(nT + nC)
	perSubHeap := (idle.HeapLiveMiB - before.HeapLiveMiB + idle.StackMiB - before.StackMiB) * 1024 / float64(n)
	perSubRSS := (idle.VmRSSMiB - before.VmRSSMiB) * 1024 / float64(n)
	res := &PhaseResult{
		Name:       "streams",
		Seconds:    withElapsed.Seconds(),
		Count:      delivered.Load(),
		Throughput: float64(delivered.Load()) / withElapsed.Seconds(),
		Unit:       "events delivered",
		Lag:        &lag,
		Series:     []MemorySample{before, idle},
		Extra: map[string]float64{
			"executionsPerSecondAlone":     aloneRate,
			"executionsPerSecondWithSubs":  withRate,
			"throughputRatio":              withRate / aloneRate,
			"serverCpuUsPerExecAlone":      aloneUs,
			"serverCpuUsPerExecWithSubs":   withUs,
			"idleKiBPerSubscriberHeap":     perSubHeap,
			"idleKiBPerSubscriberRSS":      perSubRSS,
			"serverCpuCoresBusyWithSubs":   cpu.Server.Seconds() / withElapsed.Seconds(),
			"serverCpuUsPerDeliveredEvent": float64(cpu.Server.Microseconds()) / float64(max(1, delivered.Load())),
			"executionRateCap":             *streamsRate,
			"firstReceiptLagP50Ms":         first.P50,
			"firstReceiptLagP99Ms":         first.P99,
			"fanoutSpreadP50Ms":            spread.P50,
			"fanoutSpreadP99Ms":            spread.P99,
			"loadSchedDelayP50Ms":          sched.P50,
			"loadSchedDelayP99Ms":          sched.P99,
			"loadCpuCoresBusyWithSubs":     cpu.Self.Seconds() / withElapsed.Seconds(),
			"loadCpuUsPerDeliveredEvent":   float64(cpu.Self.Microseconds()) / float64(max(1, delivered.Load())),
			"duplicates":                   float64(dups),
			"outOfOrder":                   float64(disorder),
		},
	}
	if cpu.ioOK && delivered.Load() > 0 {
		// Each subscriber's batch is at least one write: what a change to the fan-out's write
		// path buys shows here first, and unlike CPU time it barely moves with the machine's load.
		res.Extra["serverWriteSyscallsPerDeliveredEvent"] = float64(cpu.Writes) / float64(delivered.Load())
	}
	if subCPU.ioOK && delivered.Load() > 0 {
		res.Extra["subscribeServerWriteSyscallsPerDeliveredEvent"] = float64(subCPU.Writes) / float64(delivered.Load())
	}
	if subCPU.serverKnown {
		res.Extra["subscribeServerCpuCoresBusyWithSubs"] = subCPU.Server.Seconds() / withElapsed.Seconds()
		res.Extra["subscribeServerCpuUsPerDeliveredEvent"] = float64(subCPU.Server.Microseconds()) / float64(max(1, delivered.Load()))
	}
	res.Notes = []string{
		fmt.Sprintf("%d subscribers of GET /v1/events?lifecycle=true and %d of one conversation's stream (%d of %d e2e clients run there), over loopback HTTP/1.1", nT, nC, *busyClients, l.cfg.clients),
		fmt.Sprintf("with the subscribers the server was %.2f cores busy, %.1f µs of server CPU per delivered event; execution rate cap (-streams-rate) %s",
			cpu.Server.Seconds()/withElapsed.Seconds(), float64(cpu.Server.Microseconds())/float64(max(1, delivered.Load())), rateCap(*streamsRate)),
		fmt.Sprintf("the load tool itself (e2e clients and subscribers, same machine) was %.2f cores busy, %.1f µs per delivered event", cpu.Self.Seconds()/withElapsed.Seconds(), float64(cpu.Self.Microseconds())/float64(max(1, delivered.Load()))),
		fmt.Sprintf("per entry: event time → its first receipt (commit, publication, one wake-up) p50 %.1f ms, p99 %.1f ms; first → last receipt among the subscribers (the fan-out) p50 %.1f ms, p99 %.1f ms", first.P50, first.P99, spread.P50, spread.P99),
		fmt.Sprintf("the load tool's own scheduling delay (a 1 ms sleep's lateness, part of every lag it reads): p50 %.2f ms, p99 %.2f ms", sched.P50, sched.P99),
		fmt.Sprintf("e2e alone %.0f executions/s (server CPU %.0f µs each); with the subscribers %.0f executions/s (%.0f µs each): **%.0f %%** of the throughput", aloneRate, aloneUs, withRate, withUs, 100*withRate/aloneRate),
		idleMemoryNote(perSubHeap, perSubRSS),
		fmt.Sprintf("lag: event time → receipt, every subscriber (event times have 1 ms resolution); %d duplicates, %d out of order; every tenant subscriber got the same number of events: %v (%v); every conversation subscriber: %v (%v)",
			dups, disorder, same(tenantEvents), minMax(tenantEvents), same(convEvents), minMax(convEvents)),
	}
	if subCPU.serverKnown {
		res.Notes = append(res.Notes, subscribeNodeNote(subCPU, withElapsed, delivered.Load()))
	}
	alone.errs.into(res)
	with.errs.into(res)
	errs.into(res)
	return res, nil
}

// idleMemoryNote states what an idle subscriber cost the node it holds its stream on: Go heap
// and stacks after GC through -admin, or only the resident set on another node than -url's.
func idleMemoryNote(heapKiB, rssKiB float64) string {
	if *subscribeServerPID > 0 {
		return fmt.Sprintf("idle subscribers (held %s): %.1f KiB each of the subscribers' node's VmRSS (its heap not measured: -admin is the executions' node)", *streamsIdleHold, rssKiB)
	}
	return fmt.Sprintf("idle subscribers (held %s): **%.1f KiB each** of Go heap and stacks after GC (%.1f KiB of VmRSS)", *streamsIdleHold, heapKiB, rssKiB)
}

// subscribeNodeNote states the subscribers' node's CPU when it is another process than -url's.
func subscribeNodeNote(m *cpuMeter, elapsed time.Duration, delivered int64) string {
	return fmt.Sprintf("the subscribers' node was %.2f cores busy, %.1f µs per delivered event", m.Server.Seconds()/elapsed.Seconds(), float64(m.Server.Microseconds())/float64(max(1, delivered)))
}

func rateCap(rate float64) string {
	if rate <= 0 {
		return "none"
	}
	return fmt.Sprintf("%.0f/s", rate)
}

func minMax(counts []int64) string {
	if len(counts) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d–%d events", slices.Min(counts), slices.Max(counts))
}

// runStreamsLoad is the e2e loop of the phase: -clients clients, -streams-busy-clients of them
// in the busy conversation, for -streams-duration.
func (l *load) runStreamsLoad(ctx context.Context, busy string) (*executionLoop, time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, *streamsDuration)
	defer cancel()
	loop := &executionLoop{errs: newErrCounter()}
	starts := startPacer(ctx, *streamsRate)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range l.cfg.clients {
		wg.Go(func() {
			conv := busy
			if i >= *busyClients {
				c, err := l.client.CreateConversation(ctx, api.CreateConversationRequest{})
				if err != nil {
					loop.errs.add(err)
					return
				}
				conv = c.ID
			}
			for awaitStart(ctx, starts) {
				if err := l.oneExecution(ctx, conv, loop); err != nil {
					if ctx.Err() == nil {
						loop.errs.add(err)
					}
					continue
				}
				loop.completed.Add(1)
			}
		})
	}
	wg.Wait()
	return loop, time.Since(start)
}
