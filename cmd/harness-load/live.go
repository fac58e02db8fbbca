package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// phaseLive measures the live path (issue 46): -live-executions clients, each in a loop for
// -live-duration, start a mock execution streaming -live-words deltas -live-delay-ms apart
// (raw POST, 202) and follow it at once (raw GET, SSE, -live-subscribers readers). Every event
// is committed before it is sent, so the figures are per event: server CPU per delivered
// event, store commits per second and events per commit, fsyncs and write system calls per
// event, allocations per event, and the lag from each event's time to its arrival at the
// client (what an outside client can observe; event times have 1 ms resolution).
func (l *load) phaseLive(ctx context.Context) (*PhaseResult, error) {
	setup, cancelSetup := context.WithTimeout(ctx, l.cfg.phaseTimeout)
	defer cancelSetup()
	convs := make([]string, l.cfg.liveExecs)
	for i := range convs {
		conv, err := l.client.CreateConversation(setup, api.CreateConversationRequest{})
		if err != nil {
			return nil, err
		}
		convs[i] = conv.ID
	}

	// Executions still streaming when the duration ends are followed to their end (bounded by
	// -phase-timeout): the figures count whole executions only.
	run, cancelRun := context.WithTimeout(ctx, l.cfg.liveDuration+l.cfg.phaseTimeout)
	defer cancelRun()
	deadline := time.Now().Add(l.cfg.liveDuration)
	var (
		completed, delivered, produced atomic.Int64
		exact                          atomic.Int64
		lags                           latencies
		wg                             sync.WaitGroup
	)
	errs := newErrCounter()
	prog := startProgress("live", "events delivered", &delivered, errs)
	wait := l.profile(ctx, "live", max(1, int(l.cfg.liveDuration.Seconds()*0.6)))
	m := l.startMeter(ctx)
	start := time.Now()
	for _, conv := range convs {
		wg.Go(func() {
			for run.Err() == nil && time.Now().Before(deadline) {
				id, err := l.startLive(run, conv)
				if err != nil {
					errs.add(err)
					time.Sleep(10 * time.Millisecond) // an error must not become a busy loop
					continue
				}
				tally, err := l.followLive(run, id, l.cfg.liveSubs)
				errs.add(err)
				delivered.Add(tally.delivered)
				produced.Add(tally.produced)
				exact.Add(int64(tally.exact))
				lags.addAll(tally.lags)
				completed.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	m.stop(ctx)
	prog.end()
	wait()

	n, events, made := completed.Load(), delivered.Load(), produced.Load()
	lag := lags.summary()
	res := &PhaseResult{
		Name:       "live",
		Seconds:    elapsed.Seconds(),
		Count:      events,
		Throughput: float64(events) / elapsed.Seconds(),
		Unit:       "events delivered",
		Lag:        &lag,
		Extra: map[string]float64{
			"executions":           float64(n),
			"liveExecutions":       float64(l.cfg.liveExecs),
			"subscribersPerExec":   float64(l.cfg.liveSubs),
			"words":                float64(l.cfg.liveWords),
			"delayMs":              float64(l.cfg.liveDelay),
			"producedEventsPerSec": float64(made) / elapsed.Seconds(),
			"eventsPerExecution":   float64(made) / float64(max(1, n)),
			"exactlyOnceReaders":   float64(exact.Load()),
			"serverCpuCoresBusy":   m.cpu.Server.Seconds() / elapsed.Seconds(),
			"loadToolCpuCoresBusy": m.cpu.Self.Seconds() / elapsed.Seconds(),
			"lagP50Ms":             lag.P50,
			"lagP99Ms":             lag.P99,
		},
	}
	serverUs, selfUs := m.cpu.per(events)
	res.Extra["serverCpuUsPerEvent"], res.Extra["loadToolCpuUsPerEvent"] = serverUs, selfUs
	notes := fmt.Sprintf("%d clients, each in a loop: raw POST (202), then %d SSE reader(s) at once, %d words at delayMs %d (%.0f events per execution); %d executions, %d/%d readers got every event exactly once, in order",
		l.cfg.liveExecs, l.cfg.liveSubs, l.cfg.liveWords, l.cfg.liveDelay, float64(made)/float64(max(1, n)), n, exact.Load(), n*int64(l.cfg.liveSubs))
	perEvent := m.perEvent(res, events, made, elapsed)
	if serverUs >= 0 {
		perEvent = fmt.Sprintf("**server CPU %.1f µs per delivered event** (%.2f cores busy); %s", serverUs, m.cpu.Server.Seconds()/elapsed.Seconds(), perEvent)
	}
	res.Notes = []string{notes, perEvent, "lag: event time → receipt (event times have 1 ms resolution)"}
	errs.into(res)
	if want := n * int64(l.cfg.liveSubs); exact.Load() != want && res.Errors == 0 {
		res.Errors, res.FirstError = want-exact.Load(), "exactly-once check failed for some readers"
	}
	return res, nil
}

// phaseMeter reads the server's CPU, system calls, commits and allocations at the start and the
// end of a measured stretch.
type phaseMeter struct {
	l                  *load
	cpu                *cpuMeter
	commits0, commits1 histogram
	commitsOK          bool
	allocs0, allocs1   allocCounters
	allocsOK           bool
}

func (l *load) startMeter(ctx context.Context) *phaseMeter {
	m := &phaseMeter{l: l}
	m.commits0, m.commitsOK = l.commitHistogram(ctx)
	m.allocs0, m.allocsOK = l.allocCounters(ctx)
	m.cpu = startCPU(l.cfg.serverPID)
	return m
}

func (m *phaseMeter) stop(ctx context.Context) {
	m.cpu.stop()
	var ok bool
	m.allocs1, ok = m.l.allocCounters(ctx)
	m.allocsOK = m.allocsOK && ok
	m.commits1, ok = m.l.commitHistogram(ctx)
	m.commitsOK = m.commitsOK && ok
}

// perEvent records the per-event figures in res.Extra and describes them: delivered counts
// every reader's copy, produced each event once (what the store commits).
func (m *phaseMeter) perEvent(res *PhaseResult, delivered, produced int64, elapsed time.Duration) string {
	if delivered <= 0 || produced <= 0 {
		return "no events"
	}
	var s string
	if m.cpu.ioOK {
		w := float64(m.cpu.Writes) / float64(delivered)
		res.Extra["serverWriteSyscallsPerEvent"] = w
		s += fmt.Sprintf("%.2f write system calls per delivered event", w)
	}
	if commits := m.commits1.since(m.commits0); m.commitsOK && commits.total() > 0 {
		c := commits.total()
		res.Extra["commitsPerSecond"] = c / elapsed.Seconds()
		res.Extra["eventsPerCommit"] = float64(produced) / c
		// bbolt syncs twice per commit (data pages, then the meta page); /proc counts no fsyncs.
		res.Extra["fsyncsPerEvent"] = 2 * c / float64(produced)
		res.Extra["commitP99UpperMs"] = finiteMs(commits.upperBound(0.99))
		s += fmt.Sprintf("; %.0f commits/s, %.1f events per commit, %.3f fsyncs per event (2 per commit); %s",
			c/elapsed.Seconds(), float64(produced)/c, 2*c/float64(produced), commitNote(commits))
	}
	if m.allocsOK {
		objects, bytes := (m.allocs1.objects-m.allocs0.objects)/float64(delivered), (m.allocs1.bytes-m.allocs0.bytes)/float64(delivered)
		res.Extra["serverAllocsPerEvent"], res.Extra["serverAllocBytesPerEvent"] = objects, bytes
		s += fmt.Sprintf("; server allocations per delivered event: %.1f (%.0f B)", objects, bytes)
	}
	return s
}
