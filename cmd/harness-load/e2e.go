package main

import (
	"context"
	"fmt"
)

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
		client := "through the SDK (an Idempotency-Key on every start)"
		if l.cfg.e2eStart == e2eStartRaw {
			client = "in raw HTTP (no Idempotency-Key, the stream read off the wire)"
		}
		res.Notes = []string{fmt.Sprintf("%d clients; the portable way: start (POST, 202) + SSE stream (GET) to run.completed, 7 events each, %s; of which POST → 202 p50 %.2f ms p99 %.2f ms, POST → first event p50 %.2f ms",
			l.cfg.clients, client, loop.startLat.summary().P50, loop.startLat.summary().P99, loop.firstEvent.summary().P50), cpuNote}
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
