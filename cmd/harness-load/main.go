// Command harness-load drives a harness-edge server (normally bin/caddy with the mock provider)
// on loopback and reports throughput, latency and memory per phase, as a JSON summary and a
// Markdown table. Every loop is bounded in count and in time. It refuses any non-loopback
// address: it is a benchmark for this machine, not a load generator for someone else's.
//
//	harness-load -url http://127.0.0.1:4310 -server-pid 1234 -admin http://127.0.0.1:2019 \
//	    -data-dir /tmp/bench/data -json out.json -md out.md
//
// Phases (-phases, comma-separated, in this order):
//
//	fsync       write+fsync of a small file in -data-dir, -fsync-samples times (the disk's floor)
//	e2e         -clients clients each create a conversation, then start mock executions
//	            ({"delayMs":0}) and stream each over SSE to its terminal event
//	fanout      one execution (delayMs 20, 200 words) followed by -subscribers SSE subscribers
//	saturation  the same with delayMs 0 and 2,000 words
//	replay      -clients clients replay a finished 1,000-word execution as JSON
//	idle        -idle-streams SSE streams held open on executions awaiting approval; server
//	            resident memory per stream
//	history     -history-executions more executions (e2e style), sampling server memory; it
//	            must stay flat instead of growing with the number of executions stored
//	live        (not in the default list) -live-executions clients each start a live execution
//	            (-live-words deltas at -live-delay-ms) with a raw POST, then GET its stream at once
//	            (-live-subscribers streams each), in a loop for -live-duration; server CPU,
//	            commits, fsyncs, write calls and allocations per event, lag (live.go)
//	streams     (not in the default list) the conversation and tenant streams: e2e load alone,
//	            then with -tenant-subscribers and -conversation-subscribers held open
//	            (streams.go)
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"
)

func main() {
	cfg := parseFlags()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "harness-load:", err)
		os.Exit(1)
	}
}

// Report is the machine-readable summary.
type Report struct {
	Started   string         `json:"started"`
	BaseURL   string         `json:"baseUrl"`
	Cores     int            `json:"cores"`
	GoVersion string         `json:"goVersion"`
	Load      string         `json:"loadAvgAtStart"`
	Phases    []*PhaseResult `json:"phases"`
}

// PhaseResult is one phase's figures. Throughput is in Unit per second.
type PhaseResult struct {
	Name       string             `json:"name"`
	Seconds    float64            `json:"seconds"`
	Count      int64              `json:"count"`
	Throughput float64            `json:"throughput"`
	Unit       string             `json:"unit"`
	Latency    Summary            `json:"latency"`
	Lag        *Summary           `json:"lag,omitempty"`
	Errors     int64              `json:"errors"`
	FirstError string             `json:"firstError,omitempty"`
	Extra      map[string]float64 `json:"extra,omitempty"`
	Notes      []string           `json:"notes,omitempty"`
	Series     []MemorySample     `json:"series,omitempty"`
	LoadBefore string             `json:"loadAvgBefore"`
	LoadAfter  string             `json:"loadAvgAfter"`
}

func run(ctx context.Context, cfg config) error {
	if err := requireLoopback(cfg.baseURL); err != nil {
		return err
	}
	if cfg.adminURL != "" {
		if err := requireLoopback(cfg.adminURL); err != nil {
			return err
		}
	}
	if cfg.e2eStart != e2eStartStream && cfg.e2eStart != e2eStartSeparate && cfg.e2eStart != e2eStartRaw {
		return fmt.Errorf("-e2e-start %q: want %s, %s or %s", cfg.e2eStart, e2eStartStream, e2eStartSeparate, e2eStartRaw)
	}
	cfg.baseURL = strings.TrimSuffix(cfg.baseURL, "/")
	cfg.adminURL = strings.TrimSuffix(cfg.adminURL, "/")
	if n, err := raiseFileLimit(); err != nil {
		progressf("could not raise the file limit (%v); it is %d", err, n)
	} else if n < uint64(cfg.idleStreams)+256 && contains(cfg.phases, "idle") {
		progressf("file limit %d is below -idle-streams %d plus slack; the idle phase will see errors", n, cfg.idleStreams)
	}

	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	l := newLoad(cfg)
	if err := l.client.Health(ctx); err != nil && contains(cfg.phases, "e2e") {
		return fmt.Errorf("server at %s is not healthy: %w", cfg.baseURL, err)
	}
	rep := &Report{
		Started:   time.Now().UTC().Format(time.RFC3339),
		BaseURL:   cfg.baseURL,
		Cores:     runtime.NumCPU(),
		GoVersion: runtime.Version(),
		Load:      loadAvg(),
	}
	phases := map[string]func(context.Context) (*PhaseResult, error){
		"fsync": l.phaseFsync,
		"e2e":   l.phaseE2E,
		"fanout": func(ctx context.Context) (*PhaseResult, error) {
			return l.phaseFanout(ctx, "fanout", cfg.fanoutWords, cfg.fanoutDelay)
		},
		"saturation": func(ctx context.Context) (*PhaseResult, error) {
			return l.phaseFanout(ctx, "saturation", cfg.satWords, 0)
		},
		"replay":  l.phaseReplay,
		"idle":    l.phaseIdle,
		"history": l.phaseHistory,
		"streams": l.phaseStreams,
		"live":    l.phaseLive,
	}
	for _, name := range cfg.phases {
		fn, ok := phases[name]
		if !ok {
			return fmt.Errorf("unknown phase %q", name)
		}
		if ctx.Err() != nil {
			break
		}
		progressf("phase %s: starting (load average %s)", name, loadAvg())
		before := loadAvg()
		res, err := fn(ctx)
		if err != nil {
			res = &PhaseResult{Name: name, Errors: 1, FirstError: err.Error()}
			progressf("phase %s: %v", name, err)
		}
		res.LoadBefore, res.LoadAfter = before, loadAvg()
		rep.Phases = append(rep.Phases, res)
		progressf("phase %s: done: %s", name, oneLine(res))
	}
	if err := writeOutputs(cfg, rep); err != nil {
		return err
	}
	return ctx.Err()
}

func oneLine(r *PhaseResult) string {
	s := fmt.Sprintf("%.0f %s/s over %.1fs", r.Throughput, r.Unit, r.Seconds)
	if r.Latency.Count > 0 {
		s += fmt.Sprintf(", p50 %.2fms p99 %.2fms max %.2fms", r.Latency.P50, r.Latency.P99, r.Latency.Max)
	}
	if r.Lag != nil {
		s += fmt.Sprintf(", lag p50 %.2fms p99 %.2fms", r.Lag.P50, r.Lag.P99)
	}
	return s + fmt.Sprintf(", errors %d", r.Errors)
}

func writeOutputs(cfg config, rep *Report) error {
	if cfg.jsonOut != "" {
		raw, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		raw = append(raw, '\n')
		if err := writeTo(cfg.jsonOut, raw); err != nil {
			return err
		}
	}
	if cfg.mdOut != "" {
		if err := writeTo(cfg.mdOut, []byte(markdown(rep))); err != nil {
			return err
		}
	}
	return nil
}

func writeTo(path string, data []byte) error {
	if path == "-" {
		_, err := os.Stdout.Write(data)
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// requireLoopback refuses any URL whose host is not a loopback address (or "localhost").
