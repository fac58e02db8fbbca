package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// requestLineRecorder is a server that remembers the raw request line of each request, exactly as
// it crossed the wire (RequestURI is not re-encoded by net/http).
type requestLineRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (rec *requestLineRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec.mu.Lock()
	rec.lines = append(rec.lines, r.Method+" "+r.RequestURI)
	rec.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(`{}`))
}

func (rec *requestLineRecorder) last() string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.lines) == 0 {
		return ""
	}
	return rec.lines[len(rec.lines)-1]
}

func TestGeneratedClientRequestLines(t *testing.T) {
	rec := &requestLineRecorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()

	client, err := api.NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	reason := "caller stopped"
	approved := true

	cases := []struct {
		name string
		call func() (*http.Response, error)
		want string
	}{
		{
			name: "cancel",
			call: func() (*http.Response, error) {
				return client.CancelExecution(ctx, "exec_0123", api.CancelExecutionRequest{Reason: &reason})
			},
			want: "POST /v1/executions/exec_0123:cancel",
		},
		{
			name: "cancel with an id that needs escaping",
			call: func() (*http.Response, error) {
				return client.CancelExecution(ctx, "a/b c:d?", api.CancelExecutionRequest{})
			},
			// ':' is a legal path character (RFC 3986 pchar) and url.PathEscape keeps it; the
			// server takes the custom-method suffix from the end of the segment, so an id that
			// contains ':' still names the right execution.
			want: "POST /v1/executions/a%2Fb%20c:d%3F:cancel",
		},
		{
			name: "respond",
			call: func() (*http.Response, error) {
				return client.RespondToAction(ctx, "exec_0123", "action_4567", api.ActionResponse{Approved: &approved})
			},
			want: "POST /v1/executions/exec_0123/actions/action_4567:respond",
		},
		{
			name: "respond with ids that need escaping",
			call: func() (*http.Response, error) {
				return client.RespondToAction(ctx, "exec/1", "act:ion 2", api.ActionResponse{})
			},
			want: "POST /v1/executions/exec%2F1/actions/act:ion%202:respond",
		},
		{
			name: "get execution",
			call: func() (*http.Response, error) { return client.GetExecution(ctx, "exec_0123") },
			want: "GET /v1/executions/exec_0123",
		},
		{
			name: "events with cursor and limit",
			call: func() (*http.Response, error) {
				after, limit := int64(7), 100
				return client.ListOrStreamEvents(ctx, "exec_0123", &api.ListOrStreamEventsParams{After: &after, Limit: &limit})
			},
			want: "GET /v1/executions/exec_0123/events?after=7&limit=100",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := c.call()
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := rec.last(); got != c.want {
				t.Errorf("request line = %q, want %q", got, c.want)
			}
		})
	}
}

func TestGeneratedClientSendsLastEventID(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Last-Event-ID")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	client, err := api.NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	last := "42"
	resp, err := client.ListOrStreamEvents(context.Background(), "exec_1", &api.ListOrStreamEventsParams{LastEventID: &last})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got != "42" {
		t.Errorf("Last-Event-ID = %q, want 42", got)
	}
}
