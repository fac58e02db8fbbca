// Package discovery is how a provider learns about its peer before it can describe itself: the
// `remote` provider reads its upstream's manifests, the `a2a` provider its agent's card. The
// first read is bounded, so a peer that is down never holds up a Caddy start or reload; when it
// does not answer, the provider serves what it can without it and the read goes on in the
// background, with capped backoff, until the peer answers, and then the watchers (the Caddy
// module, which registers the providers again) are told.
package discovery

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// Backoff of the background reads.
const (
	retryMin = 500 * time.Millisecond
	retryMax = 30 * time.Second
)

// Config says what to read and how to talk about it.
type Config struct {
	// Read reads the peer's description and keeps it; nil when it did.
	Read func(ctx context.Context) error
	// Final reports an answer that no retry can change now (the peer answers, but not with
	// what this provider needs): Start returns it instead of going on in the background.
	Final func(error) bool
	// GiveUp, when set, stops the background reads on an answer (the peer will not become
	// usable without a new configuration here); unset, they go on until a read succeeds (the
	// peer's own configuration may change).
	GiveUp func(error) bool
	// FirstTimeout bounds Start's read; RetryTimeout each background read.
	FirstTimeout, RetryTimeout time.Duration
	Log                        *slog.Logger
	// What names the description in log lines ("the upstream's manifests", "the agent's card");
	// Attrs identify the peer in them.
	What  string
	Attrs []any
}

// Discovery is one peer's description being read.
type Discovery struct {
	cfg Config

	mu       sync.Mutex
	watchers []func()
	stop     context.CancelFunc
	done     chan struct{}
}

// New prepares the reads; it contacts nothing.
func New(cfg Config) *Discovery {
	if cfg.Final == nil {
		cfg.Final = func(error) bool { return false }
	}
	if cfg.GiveUp == nil {
		cfg.GiveUp = func(error) bool { return false }
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Discovery{cfg: cfg}
}

// Start reads the description, waiting at most FirstTimeout (and ctx). A Final answer is
// returned. Any other failure returns nil and the reads go on in the background until one
// succeeds (the watchers are then told), GiveUp says to stop, or Close is called.
func (d *Discovery) Start(ctx context.Context) error {
	readCtx, cancel := context.WithTimeout(ctx, d.cfg.FirstTimeout)
	err := d.cfg.Read(readCtx)
	cancel()
	if err == nil {
		return nil
	}
	if d.cfg.Final(err) {
		return err
	}
	d.cfg.Log.Warn("could not read "+d.cfg.What+"; serving without it and retrying in the background",
		append(slices.Clone(d.cfg.Attrs), "error", err)...)
	bg, stop := context.WithCancel(context.Background())
	d.mu.Lock()
	d.stop, d.done = stop, make(chan struct{})
	done := d.done
	d.mu.Unlock()
	go func() {
		defer close(done)
		d.retry(bg)
	}()
	return nil
}

// retry reads until a read succeeds, an answer makes it give up, or ctx ends, with capped
// backoff.
func (d *Discovery) retry(ctx context.Context) {
	wait := retryMin
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		readCtx, cancel := context.WithTimeout(ctx, d.cfg.RetryTimeout)
		err := d.cfg.Read(readCtx)
		cancel()
		switch {
		case err == nil:
			d.cfg.Log.Info("read "+d.cfg.What, d.cfg.Attrs...)
			d.notify()
			return
		case ctx.Err() != nil || errors.Is(err, context.Canceled):
			return
		case d.cfg.GiveUp(err):
			d.cfg.Log.Error("cannot use "+d.cfg.What, append(slices.Clone(d.cfg.Attrs), "error", err)...)
			return
		}
		d.cfg.Log.Debug(d.cfg.What+" still unavailable", append(slices.Clone(d.cfg.Attrs), "error", err)...)
		wait = min(2*wait, retryMax)
	}
}

// Watch registers fn, called (on another goroutine) when the description arrives after Start
// returned.
func (d *Discovery) Watch(fn func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.watchers = append(d.watchers, fn)
}

func (d *Discovery) notify() {
	d.mu.Lock()
	watchers := slices.Clone(d.watchers)
	d.mu.Unlock()
	for _, fn := range watchers {
		fn()
	}
}

// Close stops the background reads and forgets the watchers.
func (d *Discovery) Close() {
	d.mu.Lock()
	stop, done := d.stop, d.done
	d.watchers = nil
	d.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}
