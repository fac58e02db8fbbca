package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// exampleGracePeriod is the grace_period of examples/Caddyfile.
const exampleGracePeriod = 5 * time.Second

// TestBinarySIGTERMWithSlowClients: the server is stopped while one client sends a POST body at
// 1 byte per second and another has an event stream open that it never reads, with the
// server's write to it blocked on full socket buffers. Caddy's default grace period is eternal,
// so before examples/Caddyfile set one the POST held the process for as long as it trickled;
// the process must now exit, and well before the generous bound below (the grace period plus
// time for a loaded machine). The stream, blocked in a write, must end at once rather than
// being cut by the grace period: a second stop with the blocked stream alone shows no forced
// shutdown in Caddy's log.
func TestBinarySIGTERMWithSlowClients(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)
	env := instanceEnv(t)

	srv := startCaddy(t, bin, env)
	log := srv.log
	c := &client{t: t, base: srv.url}
	execID := c.bigFinishedExecution()
	stream := openUnreadStream(t, srv.url, execID)
	defer stream.Close()
	slow := trickleBody(t, srv.url)
	defer slow.Close()

	stopped := time.Now()
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	bound := exampleGracePeriod + 25*time.Second
	select {
	case err := <-srv.exited:
		if err != nil {
			t.Fatalf("caddy exited with %v after SIGTERM\n%s", err, log)
		}
		t.Logf("exited %v after SIGTERM with a trickling POST and an unread stream", time.Since(stopped).Round(100*time.Millisecond))
	case <-time.After(bound):
		t.Fatalf("caddy still running %v after SIGTERM with a slow POST and an unread stream attached\n%s", bound, log)
	}

	// Again with the blocked stream alone: the harness ends it itself, so the servers drain
	// before the grace period and Caddy does not report a forced shutdown.
	srv = startCaddy(t, bin, env)
	log = srv.log
	stream2 := openUnreadStream(t, srv.url, execID)
	defer stream2.Close()
	srv.stop(t)
	if strings.Contains(log.String(), `"server shutdown"`) {
		t.Fatalf("the unread stream was cut by the grace period, not ended by the harness:\n%s", log)
	}
}

// TestBinarySlowBodyAnswers408: a POST whose body trickles in at 1 byte per second meets the
// example's read_body timeout and is answered 408 with a VALIDATION_ERROR Problem (it was a 500).
// An event stream opened before it still delivers events after the timeout: read_body bounds
// bodies, not streams.
func TestBinarySlowBodyAnswers408(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)
	srv := startCaddy(t, bin, instanceEnv(t))
	c := &client{t: t, base: srv.url}
	conv := c.post("/v1/conversations", map[string]any{}, http.StatusCreated)
	waiting := c.post("/v1/executions", map[string]any{
		"conversationId": conv["id"], "providerId": "mock", "input": "wait",
		"config": map[string]any{"requireApproval": true},
	}, http.StatusAccepted)
	waitingID := waiting["id"].(string)
	c.waitFor(waitingID, api.ExecutionStateAwaitingApproval)
	stream := c.openStream(waitingID)
	defer stream.Body.Close()

	slow := trickleBody(t, srv.url)
	defer slow.Close()
	_ = slow.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(slow), nil)
	if err != nil {
		t.Fatalf("no answer to the slow body: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || resp.Header.Get("Content-Type") != "application/json" ||
		string(body) != `{"code":"VALIDATION_ERROR","message":"Request body was not received in time"}` {
		t.Fatalf("slow body: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}

	// The stream opened before is still served: approve, and its events arrive to the end.
	var list api.EventList
	if err := json.Unmarshal(c.getRaw("/v1/executions/"+waitingID+"/events"), &list); err != nil {
		t.Fatal(err)
	}
	actionID := ""
	for _, ev := range list.Events {
		if ev.Type == api.StandardEventTypeActionRequired {
			actionID = typed(ev.Data.AsActionRequest()).ID
		}
	}
	c.post("/v1/executions/"+waitingID+"/actions/"+actionID+":respond",
		map[string]any{"approved": true}, http.StatusOK)
	all, err := io.ReadAll(stream.Body)
	if err != nil || !bytes.Contains(all, []byte("event: run.completed")) {
		t.Fatalf("the stream after the body timeout: %v\n%s", err, all)
	}
	srv.stop(t)
}

// TestBinaryAnswersOnlyItsHostNames: examples/Caddyfile serves the API for 127.0.0.1 and
// localhost only. A DNS-rebound name (the browser sends Host: evil.example) gets a 421 Problem
// and no data, and a cross-origin page's POST is refused with 403 through Caddy as well.
func TestBinaryAnswersOnlyItsHostNames(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)
	env := instanceEnv(t)
	srv := startCaddy(t, bin, env)
	port := lookup(env, "HARNESS_PORT")

	get := func(host, origin, method, path string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), method, srv.url+path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type") + " " + string(b)
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port} {
		if status, body := get(host, "", http.MethodGet, "/v1/runtime"); status != http.StatusOK {
			t.Fatalf("Host %s: %d %s", host, status, body)
		}
	}
	for _, host := range []string{"evil.example:" + port, "evil.example", "127.0.0.2:" + port} {
		status, body := get(host, "", http.MethodGet, "/v1/runtime")
		if status != http.StatusMisdirectedRequest || !strings.HasPrefix(body, `application/json {"code":"MISDIRECTED_REQUEST",`) {
			t.Fatalf("Host %s: %d %s", host, status, body)
		}
	}
	status, body := get("127.0.0.1:"+port, "http://evil.example", http.MethodPost, "/v1/conversations")
	if status != http.StatusForbidden || body != `application/json {"code":"ORIGIN_NOT_ALLOWED","message":"Origin not allowed: http://evil.example"}` {
		t.Fatalf("cross-origin POST: %d %s", status, body)
	}
	if status, body := get("localhost:"+port, "http://localhost:"+port, http.MethodPost, "/v1/conversations"); status != http.StatusCreated {
		t.Fatalf("same-origin POST: %d %s", status, body)
	}
	srv.stop(t)
}

// bigFinishedExecution runs an execution whose events take about 3 MB as SSE (1,000 chunks of
// 1,000 bytes, then the whole text twice): more than a loopback connection buffers.
func (c *client) bigFinishedExecution() string {
	c.t.Helper()
	conv := c.post("/v1/conversations", map[string]any{}, http.StatusCreated)
	exec := c.post("/v1/executions", map[string]any{
		"conversationId": conv["id"], "providerId": "mock",
		"input": strings.Repeat(strings.Repeat("a", 999)+" ", 1000),
	}, http.StatusAccepted)
	id := exec["id"].(string)
	c.waitFor(id, api.ExecutionStateSucceeded)
	return id
}

// openUnreadStream opens an event stream with a 4 KiB receive buffer and reads nothing after
// the status line, then waits until the server's write to it is blocked: its send queue is
// full and stays so while more events are left to send.
func openUnreadStream(t *testing.T, base, execID string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var sockErr error
		if err := c.Control(func(fd uintptr) {
			sockErr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); err != nil {
			return err
		}
		return sockErr
	}}
	addr := strings.TrimPrefix(base, "http://")
	conn, err := d.DialContext(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "GET /v1/executions/%s/events HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", execID, addr)
	status, err := bufio.NewReaderSize(conn, 16).ReadString('\n')
	if err != nil || !strings.Contains(status, " 200 ") {
		t.Fatalf("stream status %q: %v", status, err)
	}
	waitForBlockedServerWrite(t, conn)
	return conn
}

// waitForBlockedServerWrite reads the server side of conn in /proc/net/tcp: its send queue must
// be non-empty and unchanged for a second. The execution's SSE is larger than any send queue
// this test has seen (about 2.8 MB on a default Linux), so a queue that stays put means the
// server's write is blocked, not finished.
func waitForBlockedServerWrite(t *testing.T, conn net.Conn) {
	t.Helper()
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skipf("cannot check that the server's write blocks without /proc/net/tcp (Linux): %v", err)
	}
	server := conn.RemoteAddr().(*net.TCPAddr)
	local := conn.LocalAddr().(*net.TCPAddr)
	var last int64 = -1
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		queued := sendQueue(t, server.Port, local.Port)
		if queued > 0 && queued == last {
			return
		}
		last = queued
		time.Sleep(time.Second)
	}
	t.Fatalf("the server's send queue to the unread stream never settled (last %d bytes)", last)
}

// sendQueue is tx_queue of the IPv4 socket from localPort to remotePort in /proc/net/tcp.
func sendQueue(t *testing.T, localPort, remotePort int) int64 {
	t.Helper()
	raw, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(":%04X", localPort)
	peer := fmt.Sprintf(":%04X", remotePort)
	for _, line := range strings.Split(string(raw), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 5 || !strings.HasSuffix(f[1], want) || !strings.HasSuffix(f[2], peer) {
			continue
		}
		tx, _, _ := strings.Cut(f[4], ":")
		n, err := strconv.ParseInt(tx, 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	return -1
}

// trickleBody starts a POST announcing 100 bytes and sends one per second, until the
// connection breaks or is closed.
func trickleBody(t *testing.T, base string) net.Conn {
	t.Helper()
	addr := strings.TrimPrefix(base, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST /v1/conversations HTTP/1.1\r\nHost: %s\r\nContent-Length: 100\r\n\r\n{", addr)
	go func() {
		for range 100 {
			time.Sleep(time.Second)
			if _, err := conn.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	return conn
}
