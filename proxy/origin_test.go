package proxy

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestCrossOriginRequestsAreRefused: a request carrying a browser's Origin header is served only
// from the API's own origin or an allowed one; every other origin (null included) gets 403
// ORIGIN_NOT_ALLOWED before the request is routed, so a page cannot start an execution with a
// "simple" text/plain POST. Requests without Origin are untouched.
func TestCrossOriginRequestsAreRefused(t *testing.T) {
	ts := newTestServer(t, Options{AllowedOrigins: []string{"https://APP.example:443", "http://localhost:3000"}})
	host := strings.TrimPrefix(ts.srv.URL, "http://") // 127.0.0.1:port
	// A body naming no conversation: if the request were routed it would be a 404.
	startBody := `{"conversationId":"conv_00000000000000000000000000000000","providerId":"mock","input":"rm -rf ~"}`

	cases := []struct {
		name    string
		method  string
		path    string
		host    string // the Host header; the server's address when empty
		origin  []string
		want    int
		refused string // the origin named in the 403
	}{
		{name: "no Origin (SDK, curl)", method: "POST", path: "/v1/executions", want: http.StatusNotFound},
		{name: "same origin", method: "POST", path: "/v1/executions", origin: []string{"http://" + host}, want: http.StatusNotFound},
		{name: "same origin, default port spelled out in Host", method: "POST", path: "/v1/executions",
			host: "LocalHost:80", origin: []string{"http://localhost"}, want: http.StatusNotFound},
		{name: "allowed origin", method: "POST", path: "/v1/executions", origin: []string{"https://app.example"}, want: http.StatusNotFound},
		{name: "allowed origin with its port", method: "POST", path: "/v1/executions", origin: []string{"http://localhost:3000"}, want: http.StatusNotFound},
		{name: "cross-origin page", method: "POST", path: "/v1/executions", origin: []string{"http://evil.example"},
			want: http.StatusForbidden, refused: "http://evil.example"},
		{name: "same host, other scheme", method: "POST", path: "/v1/executions", origin: []string{"https://" + host},
			want: http.StatusForbidden, refused: "https://" + host},
		{name: "same host, other port", method: "POST", path: "/v1/executions", origin: []string{"http://127.0.0.1:1"},
			want: http.StatusForbidden, refused: "http://127.0.0.1:1"},
		{name: "allowed host on another port", method: "POST", path: "/v1/executions", origin: []string{"http://localhost:3001"},
			want: http.StatusForbidden, refused: "http://localhost:3001"},
		{name: "opaque origin", method: "POST", path: "/v1/executions", origin: []string{"null"},
			want: http.StatusForbidden, refused: "null"},
		{name: "not an origin", method: "POST", path: "/v1/executions", origin: []string{"evil"},
			want: http.StatusForbidden, refused: "evil"},
		{name: "two origins", method: "POST", path: "/v1/executions", origin: []string{"http://" + host, "http://evil.example"},
			want: http.StatusForbidden, refused: "http://" + host},
		{name: "a read from another origin", method: "GET", path: "/v1/runtime", origin: []string{"http://evil.example"},
			want: http.StatusForbidden, refused: "http://evil.example"},
		{name: "a read from the same origin", method: "GET", path: "/v1/runtime", origin: []string{"http://" + host}, want: http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			if tc.method == "POST" {
				body = strings.NewReader(startBody)
			}
			req, err := http.NewRequestWithContext(context.Background(), tc.method, ts.srv.URL+tc.path, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "text/plain")
			for _, o := range tc.origin {
				req.Header.Add("Origin", o)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := ts.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			res := result{status: resp.StatusCode, header: resp.Header, body: raw}
			if tc.refused == "" {
				requireStatus(t, res, tc.want)
				return
			}
			requireStatusBody(t, res, http.StatusForbidden,
				`{"code":"ORIGIN_NOT_ALLOWED","message":"Origin not allowed: `+tc.refused+`"}`)
			validateResponse(t, request{method: tc.method, path: tc.path}, res)
		})
	}
}

func TestNormalizeOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:4310":   "http://127.0.0.1:4310",
		"https://App.Example":     "https://app.example",
		"https://app.example:443": "https://app.example",
		"http://app.example:443":  "http://app.example:443",
		"http://[::1]:80":         "http://[::1]",
		"https://app.example/":    "https://app.example",
	} {
		got, err := NormalizeOrigin(in)
		if err != nil || got != want {
			t.Errorf("NormalizeOrigin(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"null", "app.example", "https://app.example/path", "https://user@app.example", "https://app.example?x", "*", ""} {
		if got, err := NormalizeOrigin(bad); err == nil {
			t.Errorf("NormalizeOrigin(%q) = %q, want an error", bad, got)
		}
	}
}
