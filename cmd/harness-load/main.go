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
//	streams     (not in the default list) the conversation and tenant streams: e2e load alone,
//	            then with -tenant-subscribers and -conversation-subscribers held open
//	            (streams.go)
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/harness-edge/harness-edge/sdk"
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
	phaseTimeout time.Duration

	jsonOut    string
	mdOut      string
	cpuProfile string
	profileDir string
	profileOf  []string
}

func main() {
	cfg := parseFlags()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "harness-load:", err)
		os.Exit(1)
	}
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
	flag.StringVar(&cfg.e2eStart, "e2e-start", e2eStartStream, "how e2e and history clients start and follow an execution: "+e2eStartStream+" (sdk Run: one request to start and stream, the final snapshot in its trailer) or "+e2eStartSeparate+" (StartExecution, then Events: the portable way, what clients of the reference do)")
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
)

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
	if cfg.e2eStart != e2eStartStream && cfg.e2eStart != e2eStartSeparate {
		return fmt.Errorf("-e2e-start %q: want %s or %s", cfg.e2eStart, e2eStartStream, e2eStartSeparate)
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
func requireLoopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("url %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("url %q: want http(s)://", raw)
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("url %q: harness-load only talks to loopback addresses (127.0.0.0/8, ::1, localhost)", raw)
	}
	return nil
}

// raiseFileLimit lifts RLIMIT_NOFILE to its hard limit (idle streams need one descriptor each).
func raiseFileLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return lim.Cur, err
		}
	}
	return lim.Cur, nil
}

func loadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// load holds what every phase shares: the SDK client and a raw HTTP client on one transport
// sized for the phase's concurrency (the default transport keeps only two idle connections per
// host, which would make every client reconnect after each request).
type load struct {
	cfg    config
	client *sdk.Client
	hc     *http.Client // raw requests: SSE streams of the fan-out and idle phases, JSON replay
}

func newLoad(cfg config) *load {
	transport := &http.Transport{
		Proxy:               nil, // loopback only: never through an HTTP proxy from the environment
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		WriteBufferSize:     4 << 10,
		ReadBufferSize:      4 << 10,
	}
	hc := &http.Client{Transport: transport}
	client, err := sdk.New(cfg.baseURL,
		sdk.WithHTTPClient(hc),
		// One try: the load tool reports errors instead of hiding them behind retries.
		sdk.WithRetry(sdk.RetryPolicy{MaxAttempts: 1}))
	if err != nil {
		panic(err) // the URL was validated already
	}
	return &load{cfg: cfg, client: client, hc: hc}
}

// errCounter counts errors and keeps the first one.
type errCounter struct {
	n     int64
	first string
	mu    chan struct{}
}

func newErrCounter() *errCounter { return &errCounter{mu: make(chan struct{}, 1)} }

func (e *errCounter) add(err error) {
	if err == nil || errors.Is(err, context.Canceled) {
		return
	}
	e.mu <- struct{}{}
	e.n++
	if e.first == "" {
		e.first = err.Error()
	}
	<-e.mu
}

func (e *errCounter) count() int64 {
	e.mu <- struct{}{}
	defer func() { <-e.mu }()
	return e.n
}

func (e *errCounter) into(r *PhaseResult) {
	e.mu <- struct{}{}
	defer func() { <-e.mu }()
	r.Errors, r.FirstError = e.n, e.first
}

// printFreePorts prints n distinct ports the kernel hands out for 127.0.0.1:0 (all held open
// until every one is chosen, so they differ).
func printFreePorts(n int) {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, "harness-load: free port:", err)
			os.Exit(1)
		}
		held = append(held, l)
		fmt.Println(l.Addr().(*net.TCPAddr).Port)
	}
}
