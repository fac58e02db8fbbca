package sdk

import (
	"context"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"time"

	sse "github.com/tmaxmax/go-sse"
)

// sseBridge runs one go-sse Connection for a stream iterator (Events, FollowConversation,
// FollowTenant). go-sse reads the connection on a goroutine of its own and calls the response
// validator and the message callback there; the bridge hands each of those calls over to the
// iterating goroutine and waits until it is done. So the iterator's state is only ever touched
// on the caller's goroutine, nothing needs a lock, and no event is buffered between the wire and
// the caller. A fix to how a stream connects is made here once, for every kind of stream.
type sseBridge struct {
	transport http.RoundTripper
	// draining, when set, bounds what the answer's body may bring once the iterator sets it
	// (drain.go): after a terminal event the rest of the answer is read, but not for ever.
	draining *atomic.Bool
	validate func(*http.Response) error // go-sse's ResponseValidator, on the iterating goroutine
	message  func(sse.Event)            // every SSE message, on the iterating goroutine
	// timer, when set, is read at each turn of the loop (the iterator may Reset its timer in
	// between) and onTimer runs on the iterating goroutine when it fires.
	timer   func() <-chan time.Time
	onTimer func()
}

// connect runs req (whose context ends the connection) until go-sse's Connect returns, serving
// the callbacks meanwhile, and returns Connect's error. The Connection never reconnects by
// itself: go-sse would resend the first request, and the iterators reconnect from a cursor.
func (b sseBridge) connect(ctx context.Context, req *http.Request) error {
	calls := make(chan func())
	onIterator := func(f func()) bool {
		done := make(chan struct{})
		select {
		case calls <- func() { defer close(done); f() }:
			<-done
			return true
		case <-ctx.Done():
			return false
		}
	}
	transport := b.transport
	if b.draining != nil {
		transport = drainLimit{next: transport, draining: b.draining}
	}
	client := sse.Client{
		HTTPClient: &http.Client{Transport: transport},
		ResponseValidator: func(r *http.Response) error {
			var err error
			if !onIterator(func() { err = b.validate(r) }) {
				return ctx.Err()
			}
			return err
		},
		Backoff: sse.Backoff{MaxRetries: -1},
	}
	conn := client.NewConnection(req)
	conn.Buffer(nil, maxEventBytes)
	conn.SubscribeToAll(func(m sse.Event) { onIterator(func() { b.message(m) }) })

	ended := make(chan error, 1) // buffered: Connect's goroutine never waits for this one
	go func() { ended <- conn.Connect() }()
	for {
		var fired <-chan time.Time
		if b.timer != nil {
			fired = b.timer()
		}
		select {
		case call := <-calls:
			call()
		case <-fired:
			b.onTimer()
		case err := <-ended:
			return err
		}
	}
}

// reconnectWait is how long a stream waits before its next attempt, after failures unhealthy
// attempts in a row (0: the stream that just ended was healthy: it brought events or stayed open
// for a heartbeat interval). See firstReconnectWait. The server's retry: hint is not used: it is
// meant for EventSource clients, which mostly have no backoff of their own; this client has, and
// follows Retry-After (resp) where the server asks it to slow down.
func (c *Client) reconnectWait(failures int, resp *http.Response) time.Duration {
	if failures > 0 || resp != nil {
		return c.retry.backoff(max(failures-1, 0), resp)
	}
	wait := min(firstReconnectWait, c.retry.MinWait)
	return wait - rand.N(wait/2+1)
}
