package main

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// detachCaddyfile is examples/Caddyfile's shape with an access log and short heartbeats.
const detachCaddyfile = `{
	admin {$HARNESS_ADMIN}
	grace_period 5s
}

http://127.0.0.1:{$HARNESS_PORT} {
	bind 127.0.0.1
	log
	harness {
		data_dir {$HARNESS_DATA_DIR}
		provider mock
		heartbeat 200ms
	}
}
`

// TestBinaryStopEndsADetachedStream: in the real Caddy, a stream of an execution waiting for an
// approval leaves net/http (Caddy writes its access log line then: status 200, the bytes so
// far, while the stream stays open); after the approval its client reads nothing, so the
// stream blocks writing the megabyte of output. SIGTERM must still end it: Caddy's graceful
// shutdown no longer knows the connection, the harness ends it (its write interrupted) and its
// Cleanup sees it gone, with no warning that detached streams were still open.
func TestBinaryStopEndsADetachedStream(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)
	env := instanceEnv(t)
	caddyfile := filepath.Join(t.TempDir(), "Caddyfile")
	if err := os.WriteFile(caddyfile, []byte(detachCaddyfile), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startCaddyWith(t, bin, env, caddyfile)
	c := &client{t: t, base: srv.url}

	conv := c.post("/v1/conversations", map[string]any{}, http.StatusCreated)
	exec := c.post("/v1/executions", map[string]any{
		"conversationId": conv["id"], "providerId": "mock",
		"input":  strings.Repeat(strings.Repeat("a", 999)+" ", 1000),
		"config": map[string]any{"requireApproval": true},
	}, http.StatusAccepted)
	id := exec["id"].(string)
	c.waitFor(id, api.ExecutionStateAwaitingApproval)

	// A client with a 4 KiB receive buffer that reads the status line and nothing more.
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var sockErr error
		if err := rc.Control(func(fd uintptr) {
			sockErr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); err != nil {
			return err
		}
		return sockErr
	}}
	addr := strings.TrimPrefix(srv.url, "http://")
	conn, err := d.DialContext(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	path := "/v1/executions/" + id + "/events"
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", path, addr)
	status, err := bufio.NewReaderSize(conn, 16).ReadString('\n')
	if err != nil || !strings.Contains(status, " 200 ") {
		t.Fatalf("stream status %q: %v", status, err)
	}

	// The access log line of the stream, written when its handler returned: it detached.
	deadline := time.Now().Add(time.Minute)
	var logged string
	for logged == "" {
		for _, line := range strings.Split(srv.log.String(), "\n") {
			if strings.Contains(line, `"uri":"`+path+`"`) && strings.Contains(line, `"status":200`) {
				logged = line
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no access log line for the idle stream: it never detached\n%s", srv.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("access log of the detached stream: %s", logged)

	var actionID string
	for _, ev := range c.get(path)["events"].([]any) {
		ev := ev.(map[string]any)
		if ev["type"] == string(api.StandardEventTypeActionRequired) {
			actionID = ev["data"].(map[string]any)["id"].(string)
		}
	}
	c.post("/v1/executions/"+id+"/actions/"+actionID+":respond", map[string]any{"approved": true}, http.StatusOK)
	waitForBlockedServerWrite(t, conn)

	stopped := time.Now()
	srv.stop(t)
	t.Logf("exited %v after SIGTERM with a detached stream blocked in a write", time.Since(stopped).Round(100*time.Millisecond))
	if strings.Contains(srv.log.String(), "detached SSE streams still open") {
		t.Fatalf("the blocked detached stream outlived Cleanup's wait:\n%s", srv.log)
	}
}

// TestLocalTLSExampleDetachedStream: examples/local-tls.Caddyfile, a client speaking HTTP/1.1
// over TLS (verified against Caddy's internal CA). The stream of an execution waiting for an
// approval detaches at once (its handler returns; the connection is taken from net/http) and
// then carries the execution to run.completed over the same TLS connection, every event once and
// in order, ends its chunked body properly, and the server closes the connection (a detached
// stream's connection cannot go back to keep-alive; an attached one would stay open for the
// example's 2 min idle timeout).
func TestLocalTLSExampleDetachedStream(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)
	in := newExampleInstance(t, bin, nil)
	exampleStarts["local-tls.Caddyfile"](in)
	srv, _ := in.start("../../examples/local-tls.Caddyfile")
	defer srv.stop(t)
	roots, err := in.internalRoot()
	if err != nil {
		t.Fatal(err)
	}
	tlsConfig := &tls.Config{RootCAs: roots, ServerName: "localhost", NextProtos: []string{"http/1.1"}}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	post := func(path, body string) map[string]any {
		t.Helper()
		resp, err := client.Post(in.base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode >= 300 {
			t.Fatalf("POST %s: %d %v %v", path, resp.StatusCode, out, err)
		}
		return out
	}
	conv := post("/v1/conversations", `{}`)
	exec := post("/v1/executions", fmt.Sprintf(`{"conversationId":%q,"providerId":"mock","input":"over tls","config":{"requireApproval":true}}`, conv["id"]))
	id := exec["id"].(string)

	conn, err := tls.Dial("tcp", strings.TrimPrefix(in.base, "https://"), tlsConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Minute)) // only keeps a broken server from hanging the test
	fmt.Fprintf(conn, "GET /v1/executions/%s/events HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n", id)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK || resp.ProtoMajor != 1 || resp.Close {
		t.Fatalf("stream: %v %v", resp, err)
	}
	events := bufio.NewReader(resp.Body)
	var ids []string
	var last string
	approved := false
	for {
		line, err := events.ReadString('\n')
		if err == io.EOF && line == "" {
			break // the last chunk: the body ended properly
		}
		if err != nil {
			t.Fatalf("stream cut after %v: %v", ids, err)
		}
		line = strings.TrimSuffix(line, "\n")
		if v, ok := strings.CutPrefix(line, "id: "); ok {
			ids = append(ids, v)
		}
		if v, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(last, "action.required") && !approved {
			var action struct {
				Data struct{ ID string } `json:"data"`
			}
			if err := json.Unmarshal([]byte(v), &action); err != nil {
				t.Fatal(err)
			}
			post("/v1/executions/"+id+"/actions/"+action.Data.ID+":respond", `{"approved":true}`)
			approved = true
		}
		if strings.HasPrefix(line, "event: ") {
			last = line
		}
	}
	if last != "event: run.completed" {
		t.Fatalf("last event %q after %v", last, ids)
	}
	for i, v := range ids {
		if v != strconv.Itoa(i+1) {
			t.Fatalf("event ids %v: want 1..%d, each once, in order", ids, len(ids))
		}
	}
	if n, err := br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("after the stream's end the connection gave %d bytes, %v; want it closed by the server", n, err)
	}
}
