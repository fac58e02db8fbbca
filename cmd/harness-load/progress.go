package main

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

var (
	stderrMu    sync.Mutex
	stderrIsTTY = func() bool {
		fi, err := os.Stderr.Stat()
		return err == nil && fi.Mode()&os.ModeCharDevice != 0
	}()
)

// progressf writes one log line to stderr.
func progressf(format string, args ...any) {
	stderrMu.Lock()
	defer stderrMu.Unlock()
	if stderrIsTTY {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
	fmt.Fprintf(os.Stderr, "harness-load: "+format+"\n", args...)
}

// progress prints a status line while a phase runs: rewritten in place on a terminal, one line
// every few seconds otherwise (a log file). Stop it before reporting.
type progress struct {
	name  string
	start time.Time
	done  *atomic.Int64
	errs  *errCounter
	what  string
	stop  chan struct{}
	ended sync.WaitGroup
}

func startProgress(name, what string, done *atomic.Int64, errs *errCounter) *progress {
	p := &progress{name: name, start: time.Now(), done: done, errs: errs, what: what, stop: make(chan struct{})}
	interval := 5 * time.Second
	if stderrIsTTY {
		interval = 500 * time.Millisecond
	}
	p.ended.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.print()
			}
		}
	})
	return p
}

func (p *progress) print() {
	elapsed := time.Since(p.start).Seconds()
	n := p.done.Load()
	var errs int64
	if p.errs != nil {
		errs = p.errs.count()
	}
	line := fmt.Sprintf("[%s] %5.1fs  %d %s  %.0f/s  errors %d  load %s", p.name, elapsed, n, p.what, float64(n)/max(elapsed, 1e-9), errs, loadAvg())
	stderrMu.Lock()
	defer stderrMu.Unlock()
	if stderrIsTTY {
		fmt.Fprint(os.Stderr, "\r\033[K"+line)
	} else {
		fmt.Fprintln(os.Stderr, "harness-load: "+line)
	}
}

func (p *progress) end() {
	close(p.stop)
	p.ended.Wait()
	if stderrIsTTY {
		stderrMu.Lock()
		fmt.Fprint(os.Stderr, "\r\033[K")
		stderrMu.Unlock()
	}
}
