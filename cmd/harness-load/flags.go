package main

import (
	"flag"
	"os"
	"strings"
	"time"
)

type config struct {
	baseURL   string
	adminURL  string
	serverPID int
	dataDir   string
	provider  string
	phases    []string

	clients      int
	e2eDuration  time.Duration
	e2eMax       int
	subscribers  int
	fanoutWords  int
	fanoutDelay  int
	satWords     int
	replayWords  int
	replayDur    time.Duration
	replayMax    int
	idleStreams  int
	e2eStart     string
	idleHold     time.Duration
	historyExecs int
	historyLimit time.Duration
	fsyncSamples int

	liveExecs    int
	liveWords    int
	liveDelay    int
	liveSubs     int
	liveDuration time.Duration
	phaseTimeout time.Duration

	jsonOut    string
	mdOut      string
	cpuProfile string
	profileDir string
	profileOf  []string
}

func parseFlags() config {
	var cfg config
	var phases string
	flag.StringVar(&cfg.baseURL, "url", "http://127.0.0.1:4310", "base URL of the server (loopback only)")
	flag.StringVar(&cfg.adminURL, "admin", "", "Caddy admin URL (loopback only), for post-GC heap figures; empty: none")
	flag.IntVar(&cfg.serverPID, "server-pid", 0, "pid of the server, to read its resident memory from /proc (0: not reported)")
	flag.StringVar(&cfg.dataDir, "data-dir", "", "directory on the server's disk for the fsync measurement (default: the system temp dir)")
	flag.StringVar(&cfg.provider, "provider", "mock", "provider id (must behave like the mock)")
	flag.StringVar(&phases, "phases", "fsync,e2e,fanout,saturation,replay,idle,history", "phases to run, in order")
	flag.IntVar(&cfg.clients, "clients", 32, "concurrent clients (e2e, replay, history, setup work)")
	flag.DurationVar(&cfg.e2eDuration, "e2e-duration", 15*time.Second, "duration of the e2e phase")
	flag.StringVar(&cfg.e2eStart, "e2e-start", e2eStartStream, "how e2e and history clients start and follow an execution: "+e2eStartStream+" (sdk Run: one request to start and stream, the final snapshot in its trailer), "+e2eStartSeparate+" (StartExecution, then Events: the portable way, what clients of the reference do) or "+e2eStartRaw+" (the portable way in raw HTTP: POST with no Idempotency-Key, then GET the SSE stream, as a browser or curl does)")
	flag.IntVar(&cfg.e2eMax, "e2e-max", 200000, "at most this many executions in the e2e phase")
	flag.IntVar(&cfg.subscribers, "subscribers", 200, "SSE subscribers of the fan-out phases")
	flag.IntVar(&cfg.fanoutWords, "fanout-words", 200, "words of the fan-out execution's input")
	flag.IntVar(&cfg.fanoutDelay, "fanout-delay-ms", 20, "delayMs of the fan-out execution")
	flag.IntVar(&cfg.satWords, "saturation-words", 2000, "words of the saturation execution's input (delayMs 0)")
	flag.IntVar(&cfg.replayWords, "replay-words", 1000, "words of the replayed execution's input")
	flag.DurationVar(&cfg.replayDur, "replay-duration", 10*time.Second, "duration of the replay phase")
	flag.IntVar(&cfg.replayMax, "replay-max", 200000, "at most this many replays")
	flag.IntVar(&cfg.idleStreams, "idle-streams", 10000, "SSE streams held open in the idle phase")
	flag.DurationVar(&cfg.idleHold, "idle-hold", 17*time.Second, "keep the idle streams open this long before measuring (past the server's heartbeat interval; at least 2s)")
	flag.IntVar(&cfg.historyExecs, "history-executions", 100000, "executions run in the history phase")
	flag.DurationVar(&cfg.historyLimit, "history-limit", 6*time.Minute, "time bound of the history phase")
	flag.IntVar(&cfg.liveExecs, "live-executions", 64, "live phase: executions streaming at once (one client each)")
	flag.IntVar(&cfg.liveWords, "live-words", 50, "live phase: words of each execution's input (one delta per word, plus the prefix's)")
	flag.IntVar(&cfg.liveDelay, "live-delay-ms", 20, "live phase: the mock's delayMs, the interval between deltas")
	flag.IntVar(&cfg.liveSubs, "live-subscribers", 1, "live phase: SSE subscribers per execution (1: the client that started it; more: fan-out)")
	flag.DurationVar(&cfg.liveDuration, "live-duration", 10*time.Second, "live phase: how long clients keep starting executions")
	flag.IntVar(&cfg.fsyncSamples, "fsync-samples", 200, "write+fsync samples")
	flag.DurationVar(&cfg.phaseTimeout, "phase-timeout", 3*time.Minute, "bound on any single phase's setup and waits")
	flag.StringVar(&cfg.jsonOut, "json", "", "write the JSON summary here ('-': stdout)")
	flag.StringVar(&cfg.mdOut, "md", "", "write the Markdown table here ('-': stdout)")
	flag.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write the load tool's own CPU profile here (client-side cost)")
	flag.StringVar(&cfg.profileDir, "profile-dir", "", "save the server's CPU profile (through -admin's /debug/pprof) of each phase in -profile-phases here, as cpu-<phase>.pprof")
	profilePhases := flag.String("profile-phases", "e2e,fanout,saturation,replay", "phases whose server CPU profile -profile-dir saves")
	freePorts := flag.Int("free-ports", 0, "print this many free loopback TCP ports, one a line, and exit (for scripts)")
	flag.Parse()
	if *freePorts > 0 {
		printFreePorts(*freePorts)
		os.Exit(0)
	}
	for _, p := range strings.Split(*profilePhases, ",") {
		if p = strings.TrimSpace(p); p != "" {
			cfg.profileOf = append(cfg.profileOf, p)
		}
	}
	for _, p := range strings.Split(phases, ",") {
		if p = strings.TrimSpace(p); p != "" {
			cfg.phases = append(cfg.phases, p)
		}
	}
	if cfg.jsonOut == "" && cfg.mdOut == "" {
		cfg.mdOut = "-"
	}
	return cfg
}

// The values of -e2e-start.
const (
	e2eStartStream   = "stream"
	e2eStartSeparate = "separate"
	e2eStartRaw      = "raw"
)
