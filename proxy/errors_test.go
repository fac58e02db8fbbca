package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/internal/testutil"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// TestRouting covers our decisions for paths and methods the reference answers with a plain
// 404: a JSON Problem 404 for unknown paths, 405 with Allow for a wrong method, and ids with a
// colon that never reach the wrong operation.
func TestRouting(t *testing.T) {
	ts := newTestServer(t, Options{})
	exec := ts.start("hello", "")

	notFound := func(method, path string) {
		t.Helper()
		res := ts.send(request{method: method, path: path}) // not in the document: nothing to validate against
		requireStatusBody(t, res, http.StatusNotFound, `{"code":"NOT_FOUND","message":"Route not found: `+method+` `+path+`"}`)
	}
	notFound(http.MethodGet, "/v1")
	notFound(http.MethodGet, "/v1/")
	notFound(http.MethodGet, "/v1/nope")
	notFound(http.MethodGet, "/v1/runtime/")
	notFound(http.MethodPost, "/v1/executions/")
	notFound(http.MethodGet, "/v1/executions/"+exec.ID+"/actions/x")
	notFound(http.MethodGet, "/v1/executions//events")
	notFound(http.MethodGet, "/other")

	notAllowed := func(method, path, allow string) {
		t.Helper()
		res := ts.do(request{method: method, path: path})
		requireStatusBody(t, res, http.StatusMethodNotAllowed,
			`{"code":"METHOD_NOT_ALLOWED","message":"Method `+method+` is not allowed on this route"}`)
		if got := res.header.Get("Allow"); got != allow {
			t.Fatalf("%s %s: Allow = %q, want %q", method, path, got, allow)
		}
	}
	notAllowed(http.MethodPost, "/healthz", "GET, HEAD")
	notAllowed(http.MethodDelete, "/v1/runtime", "GET, HEAD")
	notAllowed(http.MethodPut, "/v1/runtime/capabilities", "GET, HEAD")
	notAllowed(http.MethodPut, "/v1/conversations", "GET, HEAD, POST")
	notAllowed(http.MethodPut, "/v1/conversations/conv_x", "GET, HEAD, PATCH, DELETE")
	notAllowed(http.MethodDelete, "/v1/executions", "GET, HEAD, POST")
	notAllowed(http.MethodPost, "/v1/conversations/conv_x/executions", "GET, HEAD")
	notAllowed(http.MethodPost, "/v1/openapi.yaml", "GET, HEAD")
	notAllowed(http.MethodPut, "/v1/openapi.json", "GET, HEAD")
	notAllowed(http.MethodDelete, "/v1/executions/"+exec.ID, "GET, HEAD")
	notAllowed(http.MethodPost, "/v1/executions/"+exec.ID+"/events", "GET, HEAD")
	notAllowed(http.MethodPatch, "/v1/executions/"+exec.ID+"/artifacts", "GET, HEAD")
	notAllowed(http.MethodOptions, "/v1/executions", "GET, HEAD, POST")
	// The cancel and respond resources: never getExecution("x:cancel").
	notAllowed(http.MethodGet, "/v1/executions/"+exec.ID+":cancel", "POST")
	notAllowed(http.MethodGet, "/v1/executions/"+exec.ID+"%3Acancel", "POST")
	notAllowed(http.MethodGet, "/v1/executions/"+exec.ID+"/actions/a:respond", "POST")

	// Any other id with a colon is looked up as given.
	requireStatusBody(t, ts.get("/v1/executions/a:b"), http.StatusNotFound, `{"code":"NOT_FOUND","message":"Execution not found: a:b"}`)
	requireStatusBody(t, ts.get("/v1/executions/a%2Fb:x/events"), http.StatusNotFound, `{"code":"NOT_FOUND","message":"Execution not found: a/b:x"}`)
	requireStatusBody(t, ts.post("/v1/executions/a:b:cancel", ""), http.StatusNotFound, `{"code":"NOT_FOUND","message":"Execution not found: a:b"}`)
}

func TestBodyLimit(t *testing.T) {
	ts := newTestServer(t, Options{MaxBodyBytes: 64})
	const tooLarge = `{"code":"VALIDATION_ERROR","message":"Request body exceeds the limit of 64 bytes"}`
	big := `{"metadata":{"k":"` + strings.Repeat("x", 100) + `"}}`

	requireStatusBody(t, ts.post("/v1/conversations", big), http.StatusRequestEntityTooLarge, tooLarge)
	requireStatusBody(t, ts.post("/v1/executions", big), http.StatusRequestEntityTooLarge, tooLarge)
	requireStatusBody(t, ts.post("/v1/executions/x:cancel", big), http.StatusRequestEntityTooLarge, tooLarge)
	requireStatusBody(t, ts.post("/v1/executions/x/actions/y:respond", big), http.StatusRequestEntityTooLarge, tooLarge)

	// Without a Content-Length (chunked), the limit still holds.
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	req := ts.newHTTPRequest(ctx, request{method: http.MethodPost, path: "/v1/conversations"})
	req.Body = io.NopCloser(strings.NewReader(big))
	req.ContentLength = -1
	resp, err := ts.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	requireStatusBody(t, result{status: resp.StatusCode, header: resp.Header, body: body}, http.StatusRequestEntityTooLarge, tooLarge)

	// Exactly at the limit is fine.
	atLimit := `{"metadata":{"k":"` + strings.Repeat("x", 64-len(`{"metadata":{"k":""}}`)) + `"}}`
	requireStatus(t, ts.post("/v1/conversations", atLimit), http.StatusCreated)
}

// TestInternalError: a failure that is not the caller's (here: the runtime is closed) is a 500
// with the fixed message; the cause goes to the log, never to the client.
func TestInternalError(t *testing.T) {
	var logs testutil.LockedBuffer
	ts := newTestServer(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := ts.rt.Close(); err != nil {
		t.Fatal(err)
	}
	const internal = `{"code":"INTERNAL_ERROR","message":"Unexpected server error"}`
	requireStatusBody(t, ts.get("/v1/executions/exec_x"), http.StatusInternalServerError, internal)
	requireStatusBody(t, ts.post("/v1/conversations", `{"metadata":{"secret":"s3cr3t-body"}}`), http.StatusInternalServerError, internal)
	requireStatusBody(t, ts.do(request{method: http.MethodGet, path: "/v1/executions/exec_x/events", header: map[string]string{"Accept": sseAccept}}),
		http.StatusInternalServerError, internal)
	if !strings.Contains(logs.String(), "Runtime is closed") {
		t.Fatalf("the cause was not logged:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "s3cr3t-body") {
		t.Fatalf("a request body reached the log:\n%s", logs.String())
	}
}

// TestPanicBecomesInternalError: a panic inside an operation answers 500 INTERNAL_ERROR
// instead of dropping the connection.
func TestPanicBecomesInternalError(t *testing.T) {
	var logs testutil.LockedBuffer
	h := New(nil, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}) // a nil runtime panics on use
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/v1/runtime")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	requireStatusBody(t, result{status: resp.StatusCode, header: resp.Header, body: body},
		http.StatusInternalServerError, `{"code":"INTERNAL_ERROR","message":"Unexpected server error"}`)
	if !strings.Contains(logs.String(), "panic") {
		t.Fatalf("the panic was not logged:\n%s", logs.String())
	}
}

// TestEveryRuntimeCodeHasItsStatus maps each code of the catalogue. Most are also produced by
// real requests in the other tests; INVALID_STATE cannot be over HTTP (the runtime abandons a
// pending action and leaves the awaiting state under one lock, docs/protocol.md §7.2), and
// PROVIDER_ERROR is never an HTTP error, so the mapping itself is checked here.
func TestEveryRuntimeCodeHasItsStatus(t *testing.T) {
	for _, tc := range []struct {
		err    *backend.Error
		status int
		body   string
	}{
		{&backend.Error{Code: backend.CodeValidation, Message: "Invalid execution request"}, 400,
			`{"code":"VALIDATION_ERROR","message":"Invalid execution request"}`},
		{&backend.Error{Code: backend.CodeNotFound, Message: "Execution not found: e"}, 404,
			`{"code":"NOT_FOUND","message":"Execution not found: e"}`},
		{&backend.Error{Code: backend.CodeProviderNotFound, Message: "Provider not found: p"}, 404,
			`{"code":"PROVIDER_NOT_FOUND","message":"Provider not found: p"}`},
		{&backend.Error{Code: backend.CodeCapabilityUnsupported, Message: "Provider p does not support required capabilities",
			Details: api.JSONObject{"providerId": "p", "capabilities": []string{"x"}}}, 422,
			`{"code":"CAPABILITY_UNSUPPORTED","details":{"capabilities":["x"],"providerId":"p"},"message":"Provider p does not support required capabilities"}`},
		{&backend.Error{Code: backend.CodeIdempotencyConflict, Message: "Idempotency key was already used with a different execution request"}, 409,
			`{"code":"IDEMPOTENCY_CONFLICT","message":"Idempotency key was already used with a different execution request"}`},
		{&backend.Error{Code: backend.CodeInvalidState, Message: "Execution cannot accept an action response while running"}, 409,
			`{"code":"INVALID_STATE","message":"Execution cannot accept an action response while running"}`},
		{&backend.Error{Code: backend.CodeActionNotFound, Message: "Action not found: a"}, 404,
			`{"code":"ACTION_NOT_FOUND","message":"Action not found: a"}`},
		{&backend.Error{Code: backend.CodeActionAlreadyResolved, Message: "Action already resolved: a"}, 409,
			`{"code":"ACTION_ALREADY_RESOLVED","message":"Action already resolved: a"}`},
		{&backend.Error{Code: backend.CodeProviderError, Message: "boom"}, 500,
			`{"code":"INTERNAL_ERROR","message":"Unexpected server error"}`},
		{&backend.Error{Code: backend.CodeInternal, Message: "Internal runtime error"}, 500,
			`{"code":"INTERNAL_ERROR","message":"Unexpected server error"}`},
		{&backend.Error{Code: "SOMETHING_NEW", Message: "x"}, 500,
			`{"code":"INTERNAL_ERROR","message":"Unexpected server error"}`},
	} {
		rec := httptest.NewRecorder()
		h := New(nil, Options{})
		// Wrapped, as the runtime may return it.
		h.writeError(rec, httptest.NewRequest(http.MethodGet, "/v1/executions/e", nil), errors.Join(errors.New("context"), tc.err))
		if rec.Code != tc.status || rec.Body.String() != tc.body {
			t.Errorf("%s: %d %s, want %d %s", tc.err.Code, rec.Code, rec.Body.String(), tc.status, tc.body)
		}
	}
}
