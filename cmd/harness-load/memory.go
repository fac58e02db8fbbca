package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// MemorySample is the server's memory at one point: resident set (VmRSS, and its anonymous
// part, which excludes the pages of the memory-mapped store file), and the Go heap in use
// right after a forced GC (HeapAlloc: live objects) when the admin endpoint is available.
type MemorySample struct {
	Label       string  `json:"label"`
	Executions  int64   `json:"executions,omitempty"`
	VmRSSMiB    float64 `json:"vmRssMiB"`
	RssAnonMiB  float64 `json:"rssAnonMiB"`
	RssFileMiB  float64 `json:"rssFileMiB"`
	HeapLiveMiB float64 `json:"heapLiveMiB,omitempty"`
	// StackMiB is the goroutine stacks in use (MemStats.StackInuse): outside the heap, and most
	// of what an idle stream's goroutine costs.
	StackMiB   float64 `json:"stackMiB,omitempty"`
	Goroutines float64 `json:"goroutines,omitempty"`
}

func (l *load) memory(ctx context.Context, label string, gc bool) MemorySample {
	s := MemorySample{Label: label}
	if l.cfg.serverPID > 0 {
		status := procStatus(l.cfg.serverPID)
		s.VmRSSMiB, s.RssAnonMiB, s.RssFileMiB = status["VmRSS"], status["RssAnon"], status["RssFile"]
	}
	if l.cfg.adminURL != "" && gc {
		s.HeapLiveMiB, s.StackMiB, s.Goroutines = l.heapAfterGC(ctx)
	}
	return s
}

// procStatus reads the kB fields of /proc/<pid>/status, in MiB.
func procStatus(pid int) map[string]float64 {
	out := map[string]float64{}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return out
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(value)
		if len(f) == 2 && f[1] == "kB" {
			if kb, err := strconv.ParseFloat(f[0], 64); err == nil {
				out[name] = kb / 1024
			}
		}
	}
	return out
}

// heapAfterGC asks the server's pprof endpoint for the heap profile with gc=1 (it runs a GC
// first) and reads HeapAlloc (live bytes, right after that GC) from the runtime.MemStats it
// prints, and the stacks in use ("# Stack = inuse / sys"); and the goroutine count.
func (l *load) heapAfterGC(ctx context.Context) (heapMiB, stackMiB, goroutines float64) {
	body, err := l.get(ctx, l.cfg.adminURL+"/debug/pprof/heap?gc=1&debug=1")
	if err == nil {
		for line := range strings.SplitSeq(string(body), "\n") {
			if v, ok := strings.CutPrefix(line, "# HeapAlloc = "); ok {
				if n, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					heapMiB = n / (1 << 20)
				}
			}
			if v, ok := strings.CutPrefix(line, "# Stack = "); ok {
				inuse, _, _ := strings.Cut(v, "/")
				if n, err := strconv.ParseFloat(strings.TrimSpace(inuse), 64); err == nil {
					stackMiB = n / (1 << 20)
				}
			}
		}
	}
	body, err = l.get(ctx, l.cfg.adminURL+"/debug/pprof/goroutine?debug=1")
	if err == nil {
		first, _, _ := strings.Cut(string(body), "\n")
		// "goroutine profile: total 1234"
		if i := strings.LastIndex(first, " "); i >= 0 {
			goroutines, _ = strconv.ParseFloat(first[i+1:], 64)
		}
	}
	return heapMiB, stackMiB, goroutines
}

func (l *load) get(ctx context.Context, url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	// Caddy's admin endpoint checks the Host header and Origin against its listen address.
	resp, err := l.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return body, nil
}

// phaseFsync measures write+fsync (and write+fdatasync, what bbolt uses) of a 4 KiB file in the
// data directory: the floor under every durable commit.
func (l *load) phaseFsync(ctx context.Context) (*PhaseResult, error) {
	dir := l.cfg.dataDir
	if dir == "" {
		dir = os.TempDir()
	}
	path := filepath.Join(dir, fmt.Sprintf("harness-load-fsync-%d", os.Getpid()))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	defer os.Remove(path)
	defer f.Close()
	block := bytes.Repeat([]byte("x"), 4096)
	var fsyncs, fdatasyncs []time.Duration
	start := time.Now()
	deadline := start.Add(l.cfg.phaseTimeout)
	for i := 0; i < l.cfg.fsyncSamples && time.Now().Before(deadline) && ctx.Err() == nil; i++ {
		t := time.Now()
		if _, err := f.WriteAt(block, int64(i%16)*4096); err != nil {
			return nil, err
		}
		if i%2 == 0 {
			if err := f.Sync(); err != nil {
				return nil, err
			}
			fsyncs = append(fsyncs, time.Since(t))
		} else {
			if err := syscall.Fdatasync(int(f.Fd())); err != nil {
				return nil, err
			}
			fdatasyncs = append(fdatasyncs, time.Since(t))
		}
	}
	elapsed := time.Since(start)
	fs, fds := summarize(fsyncs), summarize(fdatasyncs)
	n := int64(len(fsyncs) + len(fdatasyncs))
	return &PhaseResult{
		Name:       "fsync",
		Seconds:    elapsed.Seconds(),
		Count:      n,
		Throughput: float64(n) / elapsed.Seconds(),
		Unit:       "syncs",
		Latency:    fs,
		Extra: map[string]float64{
			"fdatasyncP50Ms": fds.P50,
			"fdatasyncP99Ms": fds.P99,
			"fdatasyncMaxMs": fds.Max,
		},
		Notes: []string{fmt.Sprintf("4 KiB write + fsync in %s (latency column); write + fdatasync p50 %.2f ms, p99 %.2f ms", dir, fds.P50, fds.P99)},
	}, nil
}

// profile fetches the server's CPU profile for the next `seconds` seconds into
// <profile-dir>/cpu-<phase>.pprof, when asked for this phase; wait for the returned func
// before the phase reports. A failure is logged, never fatal.
func (l *load) profile(ctx context.Context, phase string, seconds int) (wait func()) {
	if l.cfg.profileDir == "" || l.cfg.adminURL == "" || !contains(l.cfg.profileOf, phase) {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", l.cfg.adminURL, max(1, seconds))
		body, err := l.get(context.WithoutCancel(ctx), url)
		if err == nil {
			err = os.WriteFile(filepath.Join(l.cfg.profileDir, "cpu-"+phase+".pprof"), body, 0o644)
		}
		if err != nil {
			progressf("phase %s: CPU profile: %v", phase, err)
		}
	}()
	return func() { <-done }
}
