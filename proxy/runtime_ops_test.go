package proxy

import (
	"net/http"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

func TestHealth(t *testing.T) {
	ts := newTestServer(t, Options{})
	requireStatusBody(t, ts.get("/healthz"), http.StatusOK, `{"status":"ok"}`)

	res := ts.do(request{method: http.MethodHead, path: "/healthz"})
	if res.status != http.StatusOK || len(res.body) != 0 {
		t.Fatalf("HEAD /healthz = %s", res)
	}
}

func TestDescribeRuntimeAndCapabilities(t *testing.T) {
	ts := newTestServer(t, Options{})
	res := ts.get("/v1/runtime")
	requireStatus(t, res, http.StatusOK)
	desc := decodeBody[api.RuntimeDescription](t, res)
	if desc.Name != "harness-edge" || desc.Version != "0.2.0" || desc.ProtocolVersion != "2026-09-02" ||
		len(desc.Providers) != 1 || desc.Providers[0].ID != "mock" {
		t.Fatalf("runtime description %+v", desc)
	}

	res = ts.get("/v1/runtime/capabilities")
	requireStatus(t, res, http.StatusOK)
	caps := decodeBody[capabilityList](t, res)
	if len(caps.Providers) != 1 || caps.Providers[0].Capabilities["action.approval"] != api.SupportLevelNative {
		t.Fatalf("capabilities %+v", caps)
	}
}

// TestOpenAPIValidationDetectsDrift proves the response validation used by every test is not
// a no-op: responses that break the document are reported.
func TestOpenAPIValidationDetectsDrift(t *testing.T) {
	jsonHeader := http.Header{"Content-Type": {contentTypeJSON}}
	for _, tc := range []struct {
		name string
		req  request
		res  result
	}{
		{"undeclared status", request{method: http.MethodGet, path: "/v1/runtime"},
			result{status: http.StatusTeapot, header: jsonHeader, body: []byte(`{"code":"X","message":"y"}`)}},
		{"missing required field", request{method: http.MethodGet, path: "/healthz"},
			result{status: http.StatusOK, header: jsonHeader, body: []byte(`{}`)}},
		{"timestamp with an offset", request{method: http.MethodGet, path: "/v1/conversations/c"},
			result{status: http.StatusOK, header: jsonHeader, body: []byte(`{"id":"c","createdAt":"2026-09-02T08:15:30.123+08:00","metadata":{}}`)}},
		{"empty problem message", request{method: http.MethodGet, path: "/v1/executions/e"},
			result{status: http.StatusNotFound, header: jsonHeader, body: []byte(`{"code":"NOT_FOUND","message":""}`)}},
		{"cursor out of range", request{method: http.MethodGet, path: "/v1/executions/e/events"},
			result{status: http.StatusOK, header: jsonHeader, body: []byte(`{"events":[],"nextCursor":9007199254740992}`)}},
		{"wrong replay header", request{method: http.MethodPost, path: "/v1/executions"},
			result{status: http.StatusAccepted, header: http.Header{"Content-Type": {contentTypeJSON}, "Idempotent-Replayed": {"false"}},
				body: []byte(`{"id":"e","conversationId":"c","providerId":"mock","state":"queued","input":"","requiredCapabilities":[],"effectiveConfig":{},"createdAt":"2026-09-02T08:15:30.123Z","updatedAt":"2026-09-02T08:15:30.123Z"}`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if problems := checkResponse(t, tc.req, tc.res); len(problems) == 0 {
				t.Fatal("the validator accepted a response that breaks the document")
			}
		})
	}
}
