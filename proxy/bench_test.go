package proxy

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Benchmarks of the HTTP layer's own cost (`go test -bench . ./proxy/`): decoding, routing,
// writing. They are not tests and assert nothing about speed.

func BenchmarkDecodeStartExecutionRequest(b *testing.B) {
	body := []byte(`{"conversationId":"conv_4b1f6f0cb4f84b5c8d7b1c2f0e3a9d11","providerId":"mock","input":"hello runtime",` +
		`"requiredCapabilities":["action.approval"],"config":{"requireApproval":true,"delayMs":5},"idempotencyKey":"order-42-attempt"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeStartExecutionRequest(body, 64); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeLargeBody decodes a start whose input is nearly the default body limit (1 MiB),
// in ASCII and in text that is mostly not (every string byte is checked for UTF-8 in the depth
// scan's pass, issue 34).
func BenchmarkDecodeLargeBody(b *testing.B) {
	for _, c := range []struct{ name, unit string }{{"ascii", "word "}, {"utf8", "wörd ✓ "}} {
		input := strings.Repeat(c.unit, (1<<20-200)/len(c.unit))
		body := []byte(`{"conversationId":"conv_4b1f6f0cb4f84b5c8d7b1c2f0e3a9d11","providerId":"mock","input":"` + input + `"}`)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeStartExecutionRequest(body, 64); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchHandler returns a handler over a real runtime and a finished execution's id.
func benchHandler(b *testing.B) (*Handler, string) {
	rt, err := local.Open(b.TempDir(), backend.Options{Providers: []backend.Provider{mock.New()}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rt.Close() })
	ctx := context.Background()
	conv, err := rt.CreateConversation(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	exec, _, err := rt.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "hello runtime"})
	if err != nil {
		b.Fatal(err)
	}
	for _, err := range backend.FollowExecution(ctx, rt, exec.ID, 0) {
		if err != nil {
			b.Fatal(err)
		}
	}
	return New(rt, Options{}), exec.ID
}

func benchServe(b *testing.B, h *Handler, method, path string, body []byte, status int) {
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, bytes.NewReader(body)))
		if rec.Code != status {
			b.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body.String())
		}
	}
}

func BenchmarkGetExecution(b *testing.B) {
	h, id := benchHandler(b)
	benchServe(b, h, http.MethodGet, "/v1/executions/"+id, nil, http.StatusOK)
}

func BenchmarkReplayEvents(b *testing.B) {
	h, id := benchHandler(b)
	benchServe(b, h, http.MethodGet, "/v1/executions/"+id+"/events?after=0", nil, http.StatusOK)
}

func BenchmarkRejectInvalidBody(b *testing.B) {
	h, _ := benchHandler(b)
	benchServe(b, h, http.MethodPost, "/v1/executions", []byte(`{"providerId":"mock"}`), http.StatusBadRequest)
}

// BenchmarkReplayStoredEvents replays a 302-event execution that is read from the store (the
// runtime was reopened, so no cache of finished executions holds it): the cost of every stored
// event's read and check (store.EventOf: its checksum) is in it.
func BenchmarkReplayStoredEvents(b *testing.B) {
	dir := b.TempDir()
	rt, err := local.Open(dir, backend.Options{Providers: []backend.Provider{mock.New()}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	conv, err := rt.CreateConversation(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	exec, _, err := rt.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: strings.TrimSpace(strings.Repeat("word ", 300))})
	if err != nil {
		b.Fatal(err)
	}
	for _, err := range backend.FollowExecution(ctx, rt, exec.ID, 0) {
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := rt.Close(); err != nil {
		b.Fatal(err)
	}
	rt, err = local.Open(dir, backend.Options{Providers: []backend.Provider{mock.New()}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rt.Close() })
	benchServe(b, New(rt, Options{}), http.MethodGet, "/v1/executions/"+exec.ID+"/events?after=0", nil, http.StatusOK)
}

// BenchmarkStartStreamed is the server's side of one e2e execution without the network: a start
// as the SDK's Run sends it (an idempotency key of its own, Accept: text/event-stream) through
// the handler over a real runtime and bbolt store, the mock's 7 events streamed to the end and
// the final snapshot in the trailer. -benchmem gives the allocations per execution of the
// decode, fingerprint, commit and SSE paths (plus the recorder's and the request's own).
func BenchmarkStartStreamed(b *testing.B) {
	rt, err := local.Open(b.TempDir(), backend.Options{Providers: []backend.Provider{mock.New()}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rt.Close() })
	conv, err := rt.CreateConversation(context.Background(), nil)
	if err != nil {
		b.Fatal(err)
	}
	h := New(rt, Options{})
	prefix := []byte(`{"conversationId":"` + conv.ID + `","providerId":"mock","input":"hello runtime","config":{"delayMs":0},"idempotencyKey":"`)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n++
		body := strconv.AppendInt(append([]byte(nil), prefix...), int64(n), 10)
		body = append(body, `"}`...)
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/v1/executions", bytes.NewReader(body))
		req.Header.Set("Accept", "text/event-stream, application/json")
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte("run.completed")) {
			b.Fatalf("start: %d %s", rec.Code, rec.Body.String())
		}
	}
}
