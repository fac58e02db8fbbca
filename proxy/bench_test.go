package proxy

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
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
	for _, err := range rt.Follow(ctx, exec.ID, 0) {
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
