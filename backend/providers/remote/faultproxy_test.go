package remote_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// faultProxy stands between the edge and the upstream and breaks things on purpose.
type faultProxy struct {
	rp *httputil.ReverseProxy

	mu sync.Mutex
	// down closes every connection without an answer (an upstream that is gone).
	down bool
	// cutStreamsAfter cuts every event stream after that many bytes (0: never).
	cutStreamsAfter int
	// fail503Every answers every n-th other request 503 without passing it on (0: never).
	fail503Every int
	// dropStarts and dropResponds: that many starts / action answers reach the upstream, but
	// the edge gets a 502 instead of the upstream's answer.
	dropStarts, dropResponds int
	// leakyErrors answers every start with a 500 whose HTML body holds a secret.
	leakyErrors bool
	// hangCancels holds every :cancel until its client goes away, never passing it on.
	hangCancels bool

	requests, cuts, unavailable, droppedStarts, droppedResponds int
}

func newFaultProxy(t *testing.T, upstream string) (*faultProxy, string) {
	t.Helper()
	target, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{rp: httputil.NewSingleHostReverseProxy(target)}
	p.rp.ErrorLog = nil
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv.URL
}

func (p *faultProxy) set(f func(p *faultProxy)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.requests++
	down, cut, leaky, hang := p.down, p.cutStreamsAfter, p.leakyErrors, p.hangCancels
	stream := r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	start := r.Method == http.MethodPost && r.URL.Path == "/v1/executions"
	respond := r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, ":respond")
	unavailable := !stream && p.fail503Every > 0 && p.requests%p.fail503Every == 0
	dropStart := start && !unavailable && p.droppedStarts < p.dropStarts
	dropRespond := respond && !unavailable && p.droppedResponds < p.dropResponds
	if unavailable {
		p.unavailable++
	}
	if dropStart {
		p.droppedStarts++
	}
	if dropRespond {
		p.droppedResponds++
	}
	if stream && cut > 0 {
		p.cuts++
	}
	p.mu.Unlock()

	switch {
	case hang && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, ":cancel"):
		_, _ = io.Copy(io.Discard, r.Body) // the server notices a closed connection only after the body
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute): // a hang guard only
		}
	case down:
		panic(http.ErrAbortHandler) // the connection closes without an answer
	case leaky && start:
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("<html>stack trace: token=SECRET-UPSTREAM-TOKEN at /srv/internal/db.go</html>"))
	case unavailable:
		w.Header().Set("Retry-After", "0")
		http.Error(w, "upstream is deploying", http.StatusServiceUnavailable)
	case dropStart || dropRespond:
		p.rp.ServeHTTP(httptest.NewRecorder(), r) // applied upstream, answer lost
		http.Error(w, "bad gateway", http.StatusBadGateway)
	case stream:
		p.rp.ServeHTTP(&cuttingWriter{ResponseWriter: w, left: cut, proxy: p}, r)
	default:
		p.rp.ServeHTTP(w, r)
	}
}

// cuttingWriter passes through left bytes of a response (all when left is 0), then aborts the
// connection mid-stream; it aborts at once when the proxy goes down.
type cuttingWriter struct {
	http.ResponseWriter
	left  int
	proxy *faultProxy
}

func (c *cuttingWriter) Write(b []byte) (int, error) {
	c.proxy.mu.Lock()
	down := c.proxy.down
	c.proxy.mu.Unlock()
	if down {
		panic(http.ErrAbortHandler)
	}
	if c.left == 0 {
		return c.ResponseWriter.Write(b)
	}
	if len(b) >= c.left {
		n, _ := c.ResponseWriter.Write(b[:c.left])
		c.left = 0
		http.NewResponseController(c.ResponseWriter).Flush()
		_ = n
		panic(http.ErrAbortHandler)
	}
	c.left -= len(b)
	return c.ResponseWriter.Write(b)
}

func (c *cuttingWriter) Flush()                      { http.NewResponseController(c.ResponseWriter).Flush() }
func (c *cuttingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
