package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// TestBinaryStreamedStartTrailsTheFinalSnapshot: through the real binary and examples/Caddyfile,
// over HTTP/1.1 (chunked) and HTTP/2 cleartext (h2c, which the example enables), a start that
// asks for the event stream ends with the trailer Harness-Execution, byte for byte the body that
// GET /v1/executions/{id} answers afterwards: Caddy's handler chain passes it through.
func TestBinaryStreamedStartTrailsTheFinalSnapshot(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	srv := startCaddy(t, buildCaddy(t), instanceEnv(t))
	defer srv.stop(t)
	c := &client{t: t, base: srv.url}
	conv := c.post("/v1/conversations", map[string]any{}, http.StatusCreated)["id"].(string)

	for _, h2c := range []bool{false, true} {
		transport := &http.Transport{Protocols: new(http.Protocols)}
		if h2c {
			transport.Protocols.SetUnencryptedHTTP2(true)
		} else {
			transport.Protocols.SetHTTP1(true)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		body := fmt.Sprintf(`{"conversationId":%q,"providerId":"mock","input":"héllo runtime"}`, conv)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.url+"/v1/executions", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream, application/json")
		resp, err := (&http.Client{Transport: transport}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		stream, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		transport.CloseIdleConnections()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("h2c=%v: streamed start %s, %v", h2c, resp.Status, err)
		}
		if wantProto := map[bool]int{false: 1, true: 2}[h2c]; resp.ProtoMajor != wantProto {
			t.Fatalf("h2c=%v: answered over %s, the test would prove nothing", h2c, resp.Proto)
		}
		if !bytes.Contains(stream, []byte("event: "+string(api.StandardEventTypeRunCompleted))) {
			t.Fatalf("h2c=%v: the stream did not end with run.completed:\n%s", h2c, stream)
		}
		id := resp.Header.Get("Harness-Execution-Id")
		if got, want := resp.Trailer.Get("Harness-Execution"), c.getRaw("/v1/executions/"+id); got != string(want) {
			t.Fatalf("h2c=%v: trailer Harness-Execution = %q\nwant the GET body %s", h2c, got, want)
		}
	}
}
