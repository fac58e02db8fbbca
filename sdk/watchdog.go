package sdk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// errStalled is what a try of a request fails with when its answer brought no byte for too
// long: the connection is presumed dead (a NAT or load balancer dropped it without a word, a
// half-open TCP connection), and waiting longer would wait for ever.
var errStalled = errors.New("no byte from the server")

// stallError says how long the answer was silent; it matches errStalled.
type stallError struct{ after time.Duration }

func (e *stallError) Error() string {
	return fmt.Sprintf("harness: %s for %s: connection presumed dead", errStalled, e.after)
}

func (e *stallError) Is(target error) bool { return target == errStalled }

// watchdogTransport is the bottom of the client's stack, under the retries, so every try of a
// request passes through it once. It gives each try its own context and cancels it when the
// server has been silent too long while the client waited: for the header, or for the next
// bytes of the body. Only silence counts. A slow answer that keeps trickling is never cut, and
// neither is a stream whose reader is busy elsewhere (a caller deciding on an approval): the
// clock runs only while a Read waits.
//
// go-sse's Connection has no per-byte hook, so this is where a dead event stream is noticed:
// the body's Read fails, and the stream reconnects from its cursor as after any drop.
type watchdogTransport struct {
	next http.RoundTripper
	// answerTimeout bounds the silence of a call's answer, streamTimeout that of an event
	// stream (which the server keeps alive with heartbeats). 0 turns the watchdog off.
	answerTimeout time.Duration
	streamTimeout time.Duration
	// followHeartbeat: a stream whose answer announces the server's heartbeat (heartbeat.go) is
	// presumed dead after DeadStreamHeartbeats of those intervals instead of streamTimeout.
	followHeartbeat bool
}

func (t *watchdogTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	timeout := t.answerTimeout
	stream := wantsEventStream(req)
	if stream {
		timeout = t.streamTimeout
	}
	if timeout <= 0 {
		return t.next.RoundTrip(req)
	}
	ctx, cancel := context.WithCancel(req.Context())
	dog := newWatchdog(timeout, cancel)
	dog.arm()
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if !dog.disarm() {
		if err == nil {
			_ = resp.Body.Close()
		}
		cancel()
		return nil, dog.stalled()
	}
	if err != nil {
		cancel()
		return nil, err
	}
	if h, ok := advertisedHeartbeat(resp.Header); ok && stream && t.followHeartbeat {
		dog.timeout = DeadStreamHeartbeats * h // before the body is handed out: no Read runs yet
	}
	resp.Body = &watchedBody{body: resp.Body, dog: dog, cancel: cancel, onBytes: bytesHookOf(req.Context())}
	return resp, nil
}

// wantsEventStream reports whether req asks for an event stream (go-sse sets Accept so).
func wantsEventStream(req *http.Request) bool {
	return strings.Contains(req.Header.Get("Accept"), "text/event-stream")
}

// watchdog cancels a try when it stays armed for timeout.
type watchdog struct {
	timeout time.Duration
	timer   *time.Timer
	// fired is set before the try is cancelled, so an error caused by the cancellation always
	// finds it set.
	fired atomic.Bool
}

func newWatchdog(timeout time.Duration, cancel context.CancelFunc) *watchdog {
	w := &watchdog{timeout: timeout}
	w.timer = time.AfterFunc(time.Hour, func() {
		w.fired.Store(true)
		cancel()
	})
	w.timer.Stop()
	return w
}

// arm starts the clock, unless the watchdog has fired already.
func (w *watchdog) arm() {
	if !w.fired.Load() {
		w.timer.Reset(w.timeout)
	}
}

// disarm stops the clock; it reports false if the watchdog has fired.
func (w *watchdog) disarm() bool {
	w.timer.Stop()
	return !w.fired.Load()
}

func (w *watchdog) stalled() error { return &stallError{after: w.timeout} }

// watchedBody is an answer's body under the watchdog: the clock runs while a Read waits;
// Close ends the try.
type watchedBody struct {
	body    io.ReadCloser
	dog     *watchdog
	cancel  context.CancelFunc
	onBytes func() // nil unless the request asked to hear of progress (see withBytesHook)
}

func (b *watchedBody) Read(p []byte) (int, error) {
	if b.dog.fired.Load() {
		return 0, b.dog.stalled()
	}
	b.dog.arm()
	n, err := b.body.Read(p)
	if !b.dog.disarm() && err != nil && err != io.EOF {
		err = b.dog.stalled() // the cancellation the watchdog caused, not the network
	}
	if n > 0 && b.onBytes != nil {
		b.onBytes()
	}
	return n, err
}

func (b *watchedBody) Close() error {
	b.dog.disarm()
	err := b.body.Close()
	b.cancel()
	return err
}

type bytesHookKey struct{}

// withBytesHook makes the watchdog call f whenever the answer to a request made with ctx
// brings bytes; an event stream uses it to tell a live connection (heartbeats included) from
// a dead one. f runs on the goroutine that reads the body.
func withBytesHook(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, bytesHookKey{}, f)
}

func bytesHookOf(ctx context.Context) func() {
	f, _ := ctx.Value(bytesHookKey{}).(func())
	return f
}
