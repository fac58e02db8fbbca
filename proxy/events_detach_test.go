package proxy

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// watchedServer is a test server whose handler is wrapped the way Caddy wraps it (no
// http.Flusher or http.Hijacker on top, Unwrap to the server's writer) and reports when the
// handler of a request carrying the header watchHeader returns.
type watchedServer struct {
	*testServer
	mu       sync.Mutex
	returned map[string]chan struct{}
}

const watchHeader = "X-Test-Watch"

func newWatchedServer(t *testing.T, opts Options, useTLS bool) *watchedServer {
	t.Helper()
	rt, err := local.Open(t.TempDir(), backend.Options{Providers: []backend.Provider{mock.New()}})
	if err != nil {
		t.Fatal(err)
	}
	observer := &countingObserver{}
	opts.Observer = observer
	opts.DetachIdleStreams = true
	h := New(rt, opts)
	ws := &watchedServer{returned: make(map[string]chan struct{})}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name := r.Header.Get(watchHeader); name != "" {
			defer close(ws.watch(name))
		}
		h.ServeHTTP(flushErrorWriter{w}, r)
	}))
	if useTLS {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(func() {
		h.Shutdown()
		if !h.WaitDetached(testTimeout) {
			t.Error("detached streams still open after Shutdown")
		}
		srv.Close()
		_ = rt.Close()
	})
	ws.testServer = &testServer{t: t, rt: rt, handler: h, srv: srv, streams: observer}
	return ws
}

// watch returns the channel closed when the handler of the request watched as name returns.
func (ws *watchedServer) watch(name string) chan struct{} {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	c, ok := ws.returned[name]
	if !ok {
		c = make(chan struct{})
		ws.returned[name] = c
	}
	return c
}

// waitDetached waits until the handler of the stream watched as name has returned while its
// stream goes on. The bound only keeps a stream that never detaches from hanging the test.
func (ws *watchedServer) waitDetached(name string) {
	ws.t.Helper()
	select {
	case <-ws.watch(name):
	case <-time.After(testTimeout):
		ws.t.Fatalf("the handler of stream %s never returned: the idle stream stayed attached", name)
	}
}

// lineStream reads an SSE body line by line, comments included.
type lineStream struct {
	t    *testing.T
	resp *http.Response
	r    *bufio.Reader
	// ids are the sequences of the events read, in order; heartbeats counts comments.
	ids        []int64
	types      []string
	heartbeats int
}

func (ws *watchedServer) openLines(id, name string, header map[string]string) *lineStream {
	ws.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	ws.t.Cleanup(cancel)
	if header == nil {
		header = map[string]string{}
	}
	header["Accept"] = sseAccept
	header[watchHeader] = name
	req := ws.newHTTPRequest(ctx, request{method: http.MethodGet, path: "/v1/executions/" + id + "/events", header: header})
	resp, err := ws.srv.Client().Do(req)
	if err != nil {
		ws.t.Fatal(err)
	}
	ws.t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 1 {
		ws.t.Fatalf("stream answered %d over %s", resp.StatusCode, resp.Proto)
	}
	return &lineStream{t: ws.t, resp: resp, r: bufio.NewReader(resp.Body)}
}

// readUntil reads lines until stop says so; it fails on the end of the body.
func (ls *lineStream) readUntil(stop func(*lineStream) bool) {
	ls.t.Helper()
	for !stop(ls) {
		if err := ls.readLine(); err != nil {
			ls.t.Fatalf("stream ended early (%v) after events %v and %d heartbeats", err, ls.ids, ls.heartbeats)
		}
	}
}

// readToEnd reads until the body ends, and fails unless it ends cleanly: a chunked body cut
// without its last chunk reads as io.ErrUnexpectedEOF.
func (ls *lineStream) readToEnd() {
	ls.t.Helper()
	for {
		err := ls.readLine()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			ls.t.Fatalf("stream did not end cleanly: %v (events %v)", err, ls.ids)
		}
	}
}

func (ls *lineStream) readLine() error {
	line, err := ls.r.ReadString('\n')
	if err != nil {
		if line != "" {
			return fmt.Errorf("%w after a partial line %q", io.ErrUnexpectedEOF, line)
		}
		return err
	}
	line = strings.TrimSuffix(line, "\n")
	switch {
	case line == ": keep-alive":
		ls.heartbeats++
	case strings.HasPrefix(line, "id: "):
		seq, err := strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64)
		if err != nil {
			ls.t.Fatalf("id line %q", line)
		}
		ls.ids = append(ls.ids, seq)
	case strings.HasPrefix(line, "event: "):
		ls.types = append(ls.types, strings.TrimPrefix(line, "event: "))
	}
	return nil
}

func (ls *lineStream) lastType() string {
	if len(ls.types) == 0 {
		return ""
	}
	return ls.types[len(ls.types)-1]
}

// replaySequences is 1..n for the execution's stored events, checked against the JSON replay.
func replaySequences(ts *testServer, id string) []int64 {
	return sequences(ts.eventList(id, "").Events)
}

// TestIdleStreamDetachesAndCarriesTheExecution: an idle stream (an execution waiting for
// approval) leaves net/http after its first heartbeat: its handler returns while the stream
// goes on, over plain HTTP/1.1 and over TLS. It keeps getting heartbeats; once approved it
// carries the rest of the execution, every event once and in order, to run.completed, and then
// ends its chunked body properly. Without detaching, the handler never returns.
func TestIdleStreamDetachesAndCarriesTheExecution(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(map[bool]string{false: "http", true: "tls"}[useTLS], func(t *testing.T) {
			ws := newWatchedServer(t, Options{Heartbeat: 50 * time.Millisecond}, useTLS)
			exec := ws.start("wait for me", `{"requireApproval":true}`)
			action := typed(ws.waitForEvent(exec.ID, api.StandardEventTypeActionRequired).Data.AsActionRequest())
			// That stream detached too; its client left, which the server notices at its next
			// heartbeat.
			waitForNoOpenStreams(t, ws.testServer)

			ls := ws.openLines(exec.ID, "idle", nil)
			ls.readUntil(func(ls *lineStream) bool { return ls.heartbeats >= 1 })
			ws.waitDetached("idle")
			if n := ws.handler.streams.detachedCount(); n != 1 {
				t.Fatalf("%d detached streams, want 1", n)
			}
			// Heartbeats go on from the stream's own goroutine.
			ls.readUntil(func(ls *lineStream) bool { return ls.heartbeats >= 3 })
			if !equalInts(ls.ids, []int64{1, 2, 3}) {
				t.Fatalf("events before the approval: %v", ls.ids)
			}

			requireStatus(t, ws.post("/v1/executions/"+exec.ID+"/actions/"+action.ID+":respond", `{"approved":true}`), http.StatusOK)
			ls.readToEnd()
			if got, want := ls.ids, replaySequences(ws.testServer, exec.ID); !equalInts(got, want) {
				t.Fatalf("the detached stream carried %v, the execution has %v", got, want)
			}
			if ls.lastType() != string(api.StandardEventTypeRunCompleted) {
				t.Fatalf("last event %q", ls.lastType())
			}
			waitForNoOpenStreams(t, ws.testServer)
			if n := ws.handler.streams.detachedCount(); n != 0 {
				t.Fatalf("%d detached streams after the end", n)
			}
		})
	}
}

// TestDetachedStreamResumesExactlyOnce: a detached stream is cut by its client after
// action.required; the server notices at its next heartbeat (no reader is left on the
// connection). A new stream resuming with Last-Event-ID detaches in turn and carries the rest
// after the approval, and `after` gives the same: every event exactly once over the cut.
func TestDetachedStreamResumesExactlyOnce(t *testing.T) {
	ws := newWatchedServer(t, Options{Heartbeat: 50 * time.Millisecond}, false)
	exec := ws.start("resume me", `{"requireApproval":true}`)
	action := typed(ws.waitForEvent(exec.ID, api.StandardEventTypeActionRequired).Data.AsActionRequest())
	waitForNoOpenStreams(t, ws.testServer)

	first := ws.openLines(exec.ID, "first", nil)
	first.readUntil(func(ls *lineStream) bool { return ls.heartbeats >= 1 })
	ws.waitDetached("first")
	first.resp.Body.Close() // the cut
	waitForNoOpenStreams(t, ws.testServer)

	last := strconv.FormatInt(first.ids[len(first.ids)-1], 10)
	resumed := ws.openLines(exec.ID, "resumed", map[string]string{"Last-Event-ID": last})
	resumed.readUntil(func(ls *lineStream) bool { return ls.heartbeats >= 1 })
	ws.waitDetached("resumed")
	requireStatus(t, ws.post("/v1/executions/"+exec.ID+"/actions/"+action.ID+":respond", `{"approved":true}`), http.StatusOK)
	resumed.readToEnd()

	want := replaySequences(ws.testServer, exec.ID)
	if got := append(append([]int64(nil), first.ids...), resumed.ids...); !equalInts(got, want) {
		t.Fatalf("before the cut %v, after it %v; the execution has %v", first.ids, resumed.ids, want)
	}
	if resumed.lastType() != string(api.StandardEventTypeRunCompleted) {
		t.Fatalf("last event %q", resumed.lastType())
	}
	var afterIDs []int64
	for _, ev := range ws.eventList(exec.ID, "?after="+last).Events {
		afterIDs = append(afterIDs, ev.Sequence)
	}
	if !equalInts(afterIDs, resumed.ids) {
		t.Fatalf("after=%s gives %v, Last-Event-ID gave %v", last, afterIDs, resumed.ids)
	}
}

// TestShutdownInterruptsADetachedStreamWhoseClientDoesNotRead: as
// TestShutdownInterruptsAStreamWhoseClientDoesNotRead, for a stream that detached while it waited
// for an approval and then blocked writing the execution's output to a client that reads
// nothing (small socket buffers, a write deadline an hour away). Shutdown must end it too, and
// WaitDetached sees it gone; net/http's own shutdown no longer knows the connection.
func TestShutdownInterruptsADetachedStreamWhoseClientDoesNotRead(t *testing.T) {
	rt, err := local.Open(t.TempDir(), backend.Options{Providers: []backend.Provider{mock.New()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	observer := &countingObserver{}
	// Heartbeats 100 ms apart: they fill the unread buffers far slower than the test runs.
	h := New(rt, Options{StreamWriteTimeout: time.Hour, Heartbeat: 100 * time.Millisecond, Observer: observer, DetachIdleStreams: true})
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = smallBufferListener{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)
	ts := &testServer{t: t, rt: rt, handler: h, srv: srv, streams: observer}

	exec := ts.start(strings.Repeat(strings.Repeat("a", 200)+" ", 2000), `{"requireApproval":true}`)
	action := typed(ts.waitForEvent(exec.ID, api.StandardEventTypeActionRequired).Data.AsActionRequest())
	waitForNoOpenStreams(t, ts) // that stream detached too, and its client left

	conn := dialWithSmallReceiveBuffer(t, srv.Listener.Addr().String())
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/executions/%s/events HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n",
		exec.ID, srv.Listener.Addr())
	status, err := bufio.NewReaderSize(conn, 16).ReadString('\n')
	if err != nil || !strings.Contains(status, " 200 ") {
		t.Fatalf("stream status line %q: %v", status, err)
	}
	deadline := time.Now().Add(testTimeout)
	for h.streams.detachedCount() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the idle stream never detached")
		}
		time.Sleep(10 * time.Millisecond)
	}
	requireStatus(t, ts.post("/v1/executions/"+exec.ID+"/actions/"+action.ID+":respond", `{"approved":true}`), http.StatusOK)

	waitForBlockedWrite(t, h)
	h.Shutdown()
	if !h.WaitDetached(testTimeout) {
		t.Fatal("the detached stream blocked in its write did not end after Shutdown")
	}
	waitForNoOpenStreams(t, ts)
}

// TestHTTP10StreamStaysAttached: an HTTP/1.0 response has no chunked encoding (net/http writes
// the body as is and closes the connection at its end), so a detached stream, which writes
// chunks, would corrupt it: an HTTP/1.0 stream stays attached, and its idle body holds nothing
// but SSE lines.
func TestHTTP10StreamStaysAttached(t *testing.T) {
	ws := newWatchedServer(t, Options{Heartbeat: 20 * time.Millisecond}, false)
	exec := ws.start("old client", `{"requireApproval":true}`)
	ws.waitForEvent(exec.ID, api.StandardEventTypeActionRequired)
	waitForNoOpenStreams(t, ws.testServer)

	conn, err := net.Dial("tcp", ws.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(testTimeout)) // only keeps a broken server from hanging the test
	fmt.Fprintf(conn, "GET /v1/executions/%s/events HTTP/1.0\r\nAccept: text/event-stream\r\n%s: old\r\n\r\n", exec.ID, watchHeader)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusOK || len(resp.TransferEncoding) != 0 {
		t.Fatalf("HTTP/1.0 stream: %v %v", resp, err)
	}
	ls := &lineStream{t: t, resp: resp, r: bufio.NewReader(resp.Body)}
	var lines []string
	for ls.heartbeats < 3 {
		line, err := ls.r.ReadString('\n')
		if err != nil {
			t.Fatalf("HTTP/1.0 stream ended: %v after %q", err, lines)
		}
		lines = append(lines, line)
		if line == ": keep-alive\n" {
			ls.heartbeats++
		}
	}
	for _, line := range lines {
		if line != "\n" && !strings.HasPrefix(line, ":") && !strings.Contains(line, ": ") {
			t.Fatalf("not an SSE line in the HTTP/1.0 body: %q (all: %q)", line, lines)
		}
	}
	select {
	case <-ws.watch("old"):
		t.Fatal("the handler of the HTTP/1.0 stream returned: it detached")
	default:
	}
}

// gzipWriter compresses the body, flushing the compressor on each flush, the way Caddy's
// `encode` handler does for text/event-stream (which its default matchers include).
type gzipWriter struct {
	http.ResponseWriter
	gz *gzip.Writer
}

func (w *gzipWriter) WriteHeader(code int) {
	w.Header().Set("Content-Encoding", "gzip")
	w.ResponseWriter.WriteHeader(code)
}

func (w *gzipWriter) Write(p []byte) (int, error) {
	w.Header().Set("Content-Encoding", "gzip")
	return w.gz.Write(p)
}

func (w *gzipWriter) FlushError() error {
	w.Header().Set("Content-Encoding", "gzip")
	if err := w.gz.Flush(); err != nil {
		return err
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *gzipWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestEncodedStreamStaysAttached: behind a compressing writer (Caddy's `encode`), a stream
// waiting for an approval stays attached: writing to the connection would bypass the compressor
// and break the gzip stream. Its heartbeats and the rest of the execution arrive compressed.
func TestEncodedStreamStaysAttached(t *testing.T) {
	ws := newWatchedServer(t, Options{Heartbeat: 20 * time.Millisecond}, false)
	h := ws.srv.Config.Handler
	ws.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(watchHeader) != "gzip" { // only the stream under test is compressed
			h.ServeHTTP(w, r)
			return
		}
		gw := &gzipWriter{ResponseWriter: w, gz: gzip.NewWriter(w)}
		h.ServeHTTP(gw, r)
		_ = gw.gz.Close()
	})
	exec := ws.start("compress me", `{"requireApproval":true}`)
	action := typed(ws.waitForEvent(exec.ID, api.StandardEventTypeActionRequired).Data.AsActionRequest())
	waitForNoOpenStreams(t, ws.testServer)

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	req := ws.newHTTPRequest(ctx, request{method: http.MethodGet, path: "/v1/executions/" + exec.ID + "/events",
		header: map[string]string{"Accept": sseAccept, watchHeader: "gzip"}})
	resp, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Content-Encoding %q", resp.Header.Get("Content-Encoding"))
	}
	gz, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	ls := &lineStream{t: t, resp: resp, r: bufio.NewReader(gz)}
	ls.readUntil(func(ls *lineStream) bool { return ls.heartbeats >= 3 })
	requireStatus(t, ws.post("/v1/executions/"+exec.ID+"/actions/"+action.ID+":respond", `{"approved":true}`), http.StatusOK)
	ls.readToEnd()
	if got, want := ls.ids, replaySequences(ws.testServer, exec.ID); !equalInts(got, want) {
		t.Fatalf("the encoded stream carried %v, the execution has %v", got, want)
	}
}

// TestClientLeftSeesTheEndOfTheConnection: the check a detached stream makes at each heartbeat
// reads the socket: false while the client is connected and silent, true once it closed the
// connection. (A read deadline already past would fail before looking at the socket and never
// see the end.)
func TestClientLeftSeesTheEndOfTheConnection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	d := &detachedConn{conn: server}
	if d.clientLeft() {
		t.Fatal("clientLeft with the client connected")
	}
	client.Close()
	deadline := time.Now().Add(testTimeout)
	for !d.clientLeft() {
		if time.Now().After(deadline) {
			t.Fatal("clientLeft never saw the client close the connection")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
