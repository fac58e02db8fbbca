package sdk

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrNoProgress ends Events (and Run and WaitForTerminal) when WithReconnectTimeout is set and
// the stream made no progress for that long: no event delivered, no byte received on an open
// stream. Test for it with errors.Is; the execution itself is not affected.
var ErrNoProgress = errors.New("harness: event stream made no progress")

// progressWatch ends an event stream's context with ErrNoProgress when the stream goes a
// client's reconnect timeout without progress. Progress is made on the goroutine that reads
// the stream (bytes) and on the iterating one (events); while the caller holds an event the
// clock stops. A nil *progressWatch (no timeout configured) does nothing.
type progressWatch struct {
	timeout time.Duration
	cancel  context.CancelCauseFunc
	timer   *time.Timer

	mu     sync.Mutex
	last   time.Time // the last progress
	paused bool
	ended  bool
}

// watchProgress returns ctx, ended with ErrNoProgress after the reconnect timeout without
// progress, and its watch. stop must be called when the stream ends.
func (c *Client) watchProgress(ctx context.Context) (context.Context, *progressWatch) {
	if c.reconnectTimeout <= 0 {
		return ctx, nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	w := &progressWatch{timeout: c.reconnectTimeout, cancel: cancel, last: time.Now()}
	w.timer = time.AfterFunc(w.timeout, w.check)
	return ctx, w
}

// check runs when the timeout may have passed since the last progress.
func (w *progressWatch) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return
	}
	if w.paused {
		w.timer.Reset(w.timeout) // resume restarts the clock anyway
		return
	}
	if idle := time.Since(w.last); idle < w.timeout {
		w.timer.Reset(w.timeout - idle)
		return
	}
	w.ended = true
	w.cancel(fmt.Errorf("%w for %s (WithReconnectTimeout)", ErrNoProgress, w.timeout))
}

// made records progress. It is cheap enough to call for every read of a stream.
func (w *progressWatch) made() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.last = time.Now()
	w.mu.Unlock()
}

// pause stops the clock while the caller holds an event; resume restarts it from zero.
func (w *progressWatch) pause() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.paused = true
	w.mu.Unlock()
}

func (w *progressWatch) resume() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.paused, w.last = false, time.Now()
	w.mu.Unlock()
}

func (w *progressWatch) stop() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.ended = true
	w.mu.Unlock()
	w.timer.Stop()
	w.cancel(nil)
}
