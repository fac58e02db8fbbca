package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/harness-edge/harness-edge/sdk"
)

// What every phase shares: the clients, the error counter, and the small helpers of the
// command line (loopback check, file limit, load average, free ports).

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
