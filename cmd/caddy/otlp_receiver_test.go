package main

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP trace receiver, as an OpenTelemetry Collector's otlp receiver
// listens: POST /v1/traces with an ExportTraceServiceRequest in protobuf (the official
// go.opentelemetry.io/proto/otlp types), answered with an ExportTraceServiceResponse. It keeps
// every span it was sent.
type otlpReceiver struct {
	t   *testing.T
	URL string // the base URL, for OTEL_EXPORTER_OTLP_ENDPOINT

	mu    sync.Mutex
	spans []receivedSpan
}

// receivedSpan is one exported span, flattened.
type receivedSpan struct {
	service  string // the resource's service.name
	name     string
	traceID  string // hex
	spanID   string
	parentID string // "" for a root span
	kind     string
	attrs    map[string]string
	events   []spanEvent
	links    []string // the linked span ids
	start    uint64   // Unix nanoseconds
	end      uint64
}

type spanEvent struct {
	name  string
	attrs map[string]string
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{t: t}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.Error(w, "only POST /v1/traces", http.StatusNotFound)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = gz
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var export coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &export); err != nil {
		r.t.Errorf("OTLP receiver: the body is not an ExportTraceServiceRequest (Content-Type %s): %v", req.Header.Get("Content-Type"), err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var got []receivedSpan
	for _, rs := range export.GetResourceSpans() {
		service := attrMap(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				span := receivedSpan{
					service: service, name: s.GetName(), kind: s.GetKind().String(),
					traceID: hex.EncodeToString(s.GetTraceId()), spanID: hex.EncodeToString(s.GetSpanId()),
					parentID: hex.EncodeToString(s.GetParentSpanId()), attrs: attrMap(s.GetAttributes()),
					start: s.GetStartTimeUnixNano(), end: s.GetEndTimeUnixNano(),
				}
				for _, e := range s.GetEvents() {
					span.events = append(span.events, spanEvent{name: e.GetName(), attrs: attrMap(e.GetAttributes())})
				}
				for _, l := range s.GetLinks() {
					span.links = append(span.links, hex.EncodeToString(l.GetSpanId()))
				}
				got = append(got, span)
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.mu.Unlock()
	answer, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(answer)
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.GetKey()] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.GetKey()] = strconv.FormatInt(v.IntValue, 10)
		case *commonpb.AnyValue_BoolValue:
			out[kv.GetKey()] = strconv.FormatBool(v.BoolValue)
		default:
			out[kv.GetKey()] = kv.GetValue().String()
		}
	}
	return out
}

// find returns the spans that match, at the time of the call.
func (r *otlpReceiver) find(match func(receivedSpan) bool) []receivedSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []receivedSpan
	for _, s := range r.spans {
		if match(s) {
			out = append(out, s)
		}
	}
	return out
}

// await waits until cond holds over the spans received so far; the bound only keeps a broken
// exporter from hanging the run (the servers export every 50 ms, OTEL_BSP_SCHEDULE_DELAY).
func (r *otlpReceiver) await(what string, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			r.mu.Lock()
			var names []string
			for _, s := range r.spans {
				names = append(names, s.service+":"+s.name)
			}
			r.mu.Unlock()
			r.t.Fatalf("the receiver never got %s; it got %v", what, names)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tracingEnv is the environment that makes a server export its traces to r.
func (r *otlpReceiver) tracingEnv(service string) []string {
	return []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + r.URL,
		"OTEL_SERVICE_NAME=" + service,
		"OTEL_BSP_SCHEDULE_DELAY=50",
	}
}
