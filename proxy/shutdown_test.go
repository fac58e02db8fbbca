package proxy

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
)

// TestShutdownInterruptsAStreamWhoseClientDoesNotRead: a client opens the event stream of an
// execution with thousands of events and never reads. With small socket buffers on both sides
// the server's write blocks; its own write deadline (StreamWriteTimeout) is an hour away. Shutdown
// must still end the stream: the handler returns, so an HTTP server shutting down is not held.
// Without the interruption the handler stays in its write for the hour.
func TestShutdownInterruptsAStreamWhoseClientDoesNotRead(t *testing.T) {
	rt, err := local.Open(t.TempDir(), backend.Options{Providers: []backend.Provider{mock.New()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	observer := &countingObserver{}
	h := New(rt, Options{StreamWriteTimeout: time.Hour, Observer: observer})
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = smallBufferListener{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)
	ts := &testServer{t: t, rt: rt, handler: h, srv: srv, streams: observer}

	// 2,000 chunks of 200 bytes, one output.text.delta event each: half a megabyte of SSE, far
	// more than the kernel buffers of a loopback connection with 4 KiB socket buffers hold. The
	// stream starts while they are still being appended; it blocks all the same.
	exec := ts.start(strings.Repeat(strings.Repeat("a", 200)+" ", 2000), "")

	conn := dialWithSmallReceiveBuffer(t, srv.Listener.Addr().String())
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/executions/%s/events HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n",
		exec.ID, srv.Listener.Addr())
	// The client reads the status line only (the server flushes its headers first), then
	// nothing more.
	status, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.Contains(status, " 200 ") {
		t.Fatalf("stream status line %q: %v", status, err)
	}

	waitForBlockedWrite(t, h)
	h.Shutdown()
	waitForNoOpenStreams(t, ts)
}

// waitForBlockedWrite waits until the one open stream has been inside the same write for a
// while: the client's buffers are full and the server cannot go on.
func waitForBlockedWrite(t *testing.T, h *Handler) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	var last uint64
	for time.Now().Before(deadline) {
		inFlight := h.streams.writesInFlight()
		if len(inFlight) > 1 {
			t.Fatalf("%d streams writing, want 1", len(inFlight))
		}
		for _, n := range inFlight {
			if n == last {
				return // the same write as 200 ms ago: blocked
			}
			last = n
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("the stream's write never blocked: the client's buffers did not fill")
}

// smallBufferListener gives every accepted connection a small send buffer, so that a client that
// does not read blocks the server's writes after kilobytes rather than megabytes.
type smallBufferListener struct{ net.Listener }

func (l smallBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, nil
}

// dialWithSmallReceiveBuffer connects with a 4 KiB receive buffer, set before the connection is
// made so that the TCP window is small from the start.
func dialWithSmallReceiveBuffer(t *testing.T, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var sockErr error
		err := c.Control(func(fd uintptr) {
			sockErr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return sockErr
	}}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// A write that starts after Shutdown is bounded by shutdownWriteTimeout, whatever
// StreamWriteTimeout says.
func TestWritesAfterShutdownGetTheShortDeadline(t *testing.T) {
	w := &deadlineWriter{ResponseWriter: httptest.NewRecorder()}
	h := New(nil, Options{StreamWriteTimeout: time.Hour})
	s := &stream{h: h, rc: http.NewResponseController(w)}
	h.Shutdown()
	before := time.Now()
	s.armWriteDeadline()
	if len(w.deadlines) != 1 || w.deadlines[0].Sub(before) > shutdownWriteTimeout+time.Second {
		t.Fatalf("deadlines after Shutdown: %v (now %v)", w.deadlines, before)
	}
}
