package sdk

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

func TestErrorFromProblem(t *testing.T) {
	body := []byte(`{"code":"CAPABILITY_UNSUPPORTED","message":"Provider mock does not support required capabilities","details":{"providerId":"mock","capabilities":["extension.mcp"]}}`)
	header := http.Header{"X-Request-Id": {"req-7"}}
	e := newError(422, header, body)
	if e.StatusCode != 422 || e.Code != "CAPABILITY_UNSUPPORTED" || e.RequestID != "req-7" ||
		e.Message != "Provider mock does not support required capabilities" {
		t.Fatalf("got %+v", e)
	}
	if e.Details["providerId"] != "mock" {
		t.Fatalf("details = %v", e.Details)
	}
	if !errors.Is(e, ErrCapabilityUnsupported) || errors.Is(e, ErrNotFound) {
		t.Fatal("errors.Is does not follow the code")
	}
	if got, want := e.Error(), "harness: 422 CAPABILITY_UNSUPPORTED: Provider mock does not support required capabilities (request req-7)"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
}

func TestErrorFromNonProblemBody(t *testing.T) {
	for _, body := range []string{"404 Not Found", "", "<html>bad gateway</html>", `{"error":"x"}`, `[1]`} {
		e := newError(502, http.Header{}, []byte(body))
		if e.Code != CodeHTTPError || e.Message != "HTTP request failed with status 502" || e.StatusCode != 502 {
			t.Errorf("body %q: got %+v", body, e)
		}
		if !errors.Is(e, ErrHTTP) {
			t.Errorf("body %q: not ErrHTTP", body)
		}
	}
}

func TestEverySentinelMatchesItsCode(t *testing.T) {
	for code, sentinel := range sentinelByCode {
		e := &Error{Code: code}
		for _, other := range sentinelByCode {
			if got := errors.Is(e, other); got != (other == sentinel) {
				t.Errorf("errors.Is(%s, %v) = %v", code, other, got)
			}
		}
	}
	if errors.Is(&Error{Code: "PROVIDER_ERROR"}, ErrInternal) {
		t.Error("an unknown code matched a sentinel")
	}
}

// A non-2xx answer of an operation reaches the caller as *Error, through errors.As, with the
// status even when the body is plain text.
func TestOperationReturnsTypedError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/executions/exec_1" {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Request-Id", "abc")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"code":"NOT_FOUND","message":"Execution not found: exec_1"}`))
			return
		}
		http.Error(w, "404 Not Found", http.StatusNotFound)
	}))
	defer srv.Close()
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GetExecution(context.Background(), "exec_1")
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrNotFound) || e.RequestID != "abc" || e.Message != "Execution not found: exec_1" {
		t.Fatalf("err = %#v", err)
	}
	_, err = c.GetConversation(context.Background(), "conv_1")
	if !errors.As(err, &e) || e.StatusCode != 404 || e.Code != CodeHTTPError {
		t.Fatalf("plain-text 404: err = %#v", err)
	}
}

// A 409 CONVERSATION_BUSY reaches the caller as a *BusyError through errors.As (the
// conversation and the executions that had not ended) and matches ErrConversationBusy; other
// answers are not busy errors.
func TestBusyErrorOfARejectedStart(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		_, _ = w.Write([]byte(`{"code":"CONVERSATION_BUSY","message":"Conversation conv_1 is busy: an execution of it has not ended",` +
			`"details":{"conversationId":"conv_1","executionIds":["exec_1","exec_2"]}}`))
	}))
	defer srv.Close()
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.StartExecution(context.Background(), api.StartExecutionRequest{ConversationID: "conv_1", ProviderID: "mock"})
	var busy *BusyError
	if !errors.As(err, &busy) || !errors.Is(err, ErrConversationBusy) {
		t.Fatalf("err = %#v, want a *BusyError matching ErrConversationBusy", err)
	}
	if busy.ConversationID != "conv_1" || fmt.Sprint(busy.ExecutionIDs) != "[exec_1 exec_2]" || busy.Answer.StatusCode != http.StatusConflict {
		t.Fatalf("busy = %+v", busy)
	}
	if !errors.Is(busy, ErrConversationBusy) || busy.Error() != busy.Answer.Error() {
		t.Fatalf("the *BusyError does not unwrap to its answer: %v", busy)
	}
	if busy.Deleting {
		t.Fatalf("a busy conversation read as one being deleted: %+v", busy)
	}
	deleting := &Error{Code: "CONVERSATION_BUSY", Details: map[string]any{"conversationId": "conv_1", "executionIds": []any{}, "deleting": true}}
	if !errors.As(deleting, &busy) || !busy.Deleting || len(busy.ExecutionIDs) != 0 {
		t.Fatalf("a conversation being deleted: %+v, want Deleting", busy)
	}
	if errors.As(&Error{Code: "IDEMPOTENCY_CONFLICT"}, &busy) {
		t.Fatal("another 409 read as a busy conversation")
	}
}
