package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawAnswer sends raw bytes on a new connection to srv and reads what comes back until the
// server closes the connection (or a minute passes): the status line, the Content-Type and the
// body, or "" when the server closed without answering.
func rawAnswer(t *testing.T, srv *server, raw string) (status, contentType, body string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return "", "", ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.Status, resp.Header.Get("Content-Type"), string(b)
}

// TestBinaryAnswersBeforeTheHandler pins what Go's HTTP server, inside Caddy, answers before
// any handler runs — so without the protocol's Problem envelope, which handle_errors cannot
// give them either (docs/operations.md, "Answers from before the harness handler"): plain text
// for a request line or headers it cannot parse, 431 for headers past max_header_size (16 KiB,
// and Go reads 4 KiB past it), a closed HTTP/2 connection for the same over h2c, and a
// connection closed without an answer when the headers never end. A request shorter than the
// 14 bytes h2c looks for ("PRI * HTTP/2.0") is answered only once read_header has run out, or
// once more bytes come.
func TestBinaryAnswersBeforeTheHandler(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	srv := startCaddy(t, buildCaddy(t), instanceEnv(t))
	host := "Host: " + strings.TrimPrefix(srv.url, "http://") + "\r\n"
	const plain = "text/plain; charset=utf-8"
	for _, c := range []struct {
		name, raw, status, contentType, body string
	}{
		{"headers of 21 KiB", "GET /v1/runtime HTTP/1.1\r\n" + host + "X-Big: " + strings.Repeat("a", 21000) + "\r\n\r\n",
			"431 Request Header Fields Too Large", plain, "431 Request Header Fields Too Large"},
		{"a request line of 30 KiB", "GET /v1/runtime?x=" + strings.Repeat("a", 30000) + " HTTP/1.1\r\n" + host + "\r\n",
			"431 Request Header Fields Too Large", plain, "431 Request Header Fields Too Large"},
		{"headers of 15 KiB reach the handler", "GET /v1/runtime HTTP/1.1\r\n" + host + "Connection: close\r\nX-Big: " + strings.Repeat("a", 15000) + "\r\n\r\n",
			"200 OK", "application/json", ""},
		{"a request line that is not HTTP", "GARBAGE_GARBAGE_GARBAGE\r\n\r\n", "400 Bad Request", plain, "400 Bad Request"},
		{"a malformed Host", "GET /v1/runtime HTTP/1.1\r\nHost: a b\r\n\r\n",
			"400 Bad Request: malformed Host header", plain, "400 Bad Request: malformed Host header"},
		{"no Host", "GET /v1/runtime HTTP/1.1\r\n\r\n",
			"400 Bad Request: missing required Host header", plain, "400 Bad Request: missing required Host header"},
		{"an unknown HTTP version", "GET /v1/runtime HTTP/9.9\r\n" + host + "\r\n",
			"505 HTTP Version Not Supported: unsupported protocol version", plain, "505 HTTP Version Not Supported: unsupported protocol version"},
		{"a transfer coding other than chunked", "POST /v1/conversations HTTP/1.1\r\n" + host + "Transfer-Encoding: gzip\r\n\r\n",
			"501 Not Implemented", plain, "Unsupported transfer encoding"},
		{"two Content-Lengths", "POST /v1/conversations HTTP/1.1\r\n" + host + "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
			"400 Bad Request", plain, "400 Bad Request"},
		{"an Expect other than 100-continue", "POST /v1/conversations HTTP/1.1\r\n" + host + "Expect: 200-ok\r\nContent-Length: 2\r\n\r\n{}",
			"417 Expectation Failed", "", ""},
		{"headers that never end (read_header)", "GET /v1/runtime HTTP/1.1\r\n" + host, "", "", ""},
		{"a request shorter than the h2c preface (read_header)", "GARBAGE\r\n\r\n", "400 Bad Request", plain, "400 Bad Request"},
	} {
		status, contentType, body := rawAnswer(t, srv, c.raw)
		if status != c.status || contentType != c.contentType || (c.body != "" && body != c.body) {
			t.Errorf("%s: %q %q %q; want %q %q %q", c.name, status, contentType, body, c.status, c.contentType, c.body)
		}
	}

	// Over HTTP/2 (h2c, as the example serves it) headers past the limit close the whole
	// connection (GOAWAY), with the other streams on it.
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	h2c := &http.Client{Transport: &http.Transport{Protocols: &protocols}}
	get := func(header int) (*http.Response, error) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.url+"/v1/runtime", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Big", strings.Repeat("a", header))
		return h2c.Do(req)
	}
	resp, err := get(15000)
	if err != nil || resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
		t.Fatalf("h2c, headers of 15 KiB: %v %v", resp, err)
	}
	resp.Body.Close()
	if resp, err := get(17000); err == nil {
		resp.Body.Close()
		t.Fatalf("h2c, headers of 17 KiB: answered %s, want the connection closed", resp.Status)
	}
	srv.stop(t)
}
