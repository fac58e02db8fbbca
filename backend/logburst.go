package backend

import (
	"errors"
	"log/slog"
	"sync"
	"time"
)

// storeErrorLogWindow is how often a burst of identical store errors is summarised.
const storeErrorLogWindow = 10 * time.Second

// burstLogger logs a repeated failure once per burst instead of once per occurrence. A failing
// disk fails every change of every running execution: one line each would be tens of thousands
// of identical lines a second, burying the first one, which is the one an operator needs.
//
// The first occurrence of a message with a given root cause is logged at once, with its
// attributes. Repeats within the window are counted; when the window ends, one line reports
// how many there were, and the burst goes on for another window. A window without repeats
// closes the burst: the next occurrence is logged at once again.
type burstLogger struct {
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

func newBurstLogger(log *slog.Logger, window time.Duration) *burstLogger {
	return &burstLogger{log: log, window: window, bursts: make(map[string]*burst)}
}

// Error logs msg with err and attrs, unless the same msg with the same root cause was logged
// within the current burst; then it only counts it.
func (b *burstLogger) Error(msg string, err error, attrs ...any) {
	key := msg
	if err != nil {
		key += "\x00" + rootCause(err).Error()
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
func (b *burstLogger) endWindow(key string) {
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

func (b *burstLogger) logRepeats(msg string, err error, n int) {
	b.log.Error(msg+" (repeated)", "repeats", n, "window", b.window, "err", err)
}

// stop reports the repeats counted so far and stops the timers; nothing is logged after it (the
// runtime has closed: a test's logger may be gone).
func (b *burstLogger) stop() {
	b.mu.Lock()
	var pending []*burst
	for key, bu := range b.bursts {
		bu.timer.Stop()
		if bu.repeats > 0 {
			pending = append(pending, &burst{msg: bu.msg, err: bu.err, repeats: bu.repeats})
		}
		delete(b.bursts, key)
	}
	b.stopped = true
	b.mu.Unlock()
	for _, bu := range pending {
		b.logRepeats(bu.msg, bu.err, bu.repeats)
	}
}

// rootCause is the innermost error of err's chain of single wraps: the part that repeats
// identically (say "no space left on device") when the wrapping names an execution or a key.
func rootCause(err error) error {
	for {
		inner := errors.Unwrap(err)
		if inner == nil {
			return err
		}
		err = inner
	}
}
