package a2a

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// A call made in an execution's context carries its traceparent to the agent, besides the
// configured headers; a call without one carries none.
func TestAgentRequestsCarryTheExecutionsTraceparent(t *testing.T) {
	got := make(chan http.Header, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header.Clone() }))
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: headerTransport{header: http.Header{"X-Api-Key": {"k"}}, next: http.DefaultTransport}}

	span := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{8}, TraceFlags: trace.FlagsSampled})
	for _, ctx := range []context.Context{trace.ContextWithSpanContext(context.Background(), span), context.Background()} {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if req.Header.Get("traceparent") != "" {
			t.Error("the caller's request was changed")
		}
	}
	traced, plain := <-got, <-got
	if want := "00-09000000000000000000000000000000-0800000000000000-01"; traced.Get("traceparent") != want || traced.Get("X-Api-Key") != "k" {
		t.Errorf("traced call: traceparent %q, X-Api-Key %q; want %q and k", traced.Get("traceparent"), traced.Get("X-Api-Key"), want)
	}
	if plain.Get("traceparent") != "" {
		t.Errorf("a call without a span context carried traceparent %q", plain.Get("traceparent"))
	}
}
