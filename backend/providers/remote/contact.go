package remote

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// contactClock remembers when the upstream was last heard from on behalf of one relay: a
// response below 500 (or 501), or any byte of a response body (event-stream heartbeats
// included). The relay's watchdog fails the execution when it stands still for longer than the
// gone timeout. It lives in the context of the relay's requests, so the transport finds it.
type contactClock struct{ last atomic.Int64 } // unix nanoseconds

func newContactClock() *contactClock {
	c := &contactClock{}
	c.touch()
	return c
}

func (c *contactClock) touch()                   { c.last.Store(time.Now().UnixNano()) }
func (c *contactClock) silentFor() time.Duration { return time.Since(time.Unix(0, c.last.Load())) }

type contactKey struct{}

func withContactClock(ctx context.Context, c *contactClock) context.Context {
	return context.WithValue(ctx, contactKey{}, c)
}

// contactTransport wraps the upstream transport and moves the clock of the request's context.
type contactTransport struct{ next http.RoundTripper }

func (t contactTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	clock, _ := req.Context().Value(contactKey{}).(*contactClock)
	if err != nil || clock == nil {
		return resp, err
	}
	if resp.StatusCode < 500 || resp.StatusCode == http.StatusNotImplemented {
		clock.touch()
	}
	resp.Body = &contactBody{ReadCloser: resp.Body, clock: clock}
	return resp, nil
}

type contactBody struct {
	io.ReadCloser
	clock *contactClock
}

func (b *contactBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.clock.touch()
	}
	return n, err
}
