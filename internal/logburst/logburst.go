// Package logburst logs a repeated failure once per burst instead of once per occurrence. A
// failing disk fails every change of every running execution, and every request that needs to
// write: one line each would be thousands of identical lines a second, burying the first one,
// which is the one an operator needs. The runtime summarises its store errors with it, the
// HTTP layer its failed requests.
package logburst

import (
	"errors"
	"log/slog"
	"sync"
	"time"
)

// Logger summarises bursts of identical errors.
//
// The first occurrence of a message with a given root cause is logged at once, with its
// attributes. Repeats within the window are counted; when the window ends, one line reports
// how many there were, and the burst goes on for another window. A window without repeats
// closes the burst: the next occurrence is logged at once again.
type Logger struct {
	log    *slog.Logger
	window time.Duration

	mu      sync.Mutex
	bursts  map[string]*burst
	stopped bool
}

type burst struct {
	msg     string
	err     error // the first occurrence's
	repeats int
	timer   *time.Timer
}

// New returns a Logger writing to log and summarising repeats every window.
func New(log *slog.Logger, window time.Duration) *Logger {
	return &Logger{log: log, window: window, bursts: make(map[string]*burst)}
}

// Error logs msg with err and attrs, unless the same msg with the same root cause was logged
// within the current burst; then it only counts it.
func (b *Logger) Error(msg string, err error, attrs ...any) {
	key := msg
	if err != nil {
		key += "\x00" + RootCause(err).Error()
	}
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return
	}
	if bu, ok := b.bursts[key]; ok {
		bu.repeats++
		b.mu.Unlock()
		return
	}
	bu := &burst{msg: msg, err: err}
	bu.timer = time.AfterFunc(b.window, func() { b.endWindow(key) })
	b.bursts[key] = bu
	b.mu.Unlock()
	b.log.Error(msg, append(attrs, "err", err)...)
}

// endWindow reports the repeats of the window that ended, or closes a quiet burst.
func (b *Logger) endWindow(key string) {
	b.mu.Lock()
	bu, ok := b.bursts[key]
	if !ok || b.stopped {
		b.mu.Unlock()
		return
	}
	n := bu.repeats
	if n == 0 {
		delete(b.bursts, key)
		b.mu.Unlock()
		return
	}
	bu.repeats = 0
	bu.timer.Reset(b.window)
	b.mu.Unlock()
	b.logRepeats(bu.msg, bu.err, n)
}

func (b *Logger) logRepeats(msg string, err error, n int) {
	b.log.Error(msg+" (repeated)", "repeats", n, "window", b.window, "err", err)
}

// Flush reports the repeats counted so far and closes every burst: the next occurrence is
// logged at once again. The Logger stays usable.
func (b *Logger) Flush() { b.flush(false) }

// Stop is Flush, after which nothing is logged any more (the owner has closed: a test's logger
// may be gone).
func (b *Logger) Stop() { b.flush(true) }

func (b *Logger) flush(stop bool) {
	b.mu.Lock()
	var pending []*burst
	for key, bu := range b.bursts {
		bu.timer.Stop()
		if bu.repeats > 0 {
			pending = append(pending, &burst{msg: bu.msg, err: bu.err, repeats: bu.repeats})
		}
		delete(b.bursts, key)
	}
	if stop {
		b.stopped = true
	}
	b.mu.Unlock()
	for _, bu := range pending {
		b.logRepeats(bu.msg, bu.err, bu.repeats)
	}
}

// RootCause is the innermost error of err's chain of single wraps: the part that repeats
// identically (say "no space left on device") when the wrapping names an execution or a key.
func RootCause(err error) error {
	for {
		inner := errors.Unwrap(err)
		if inner == nil {
			return err
		}
		err = inner
	}
}
