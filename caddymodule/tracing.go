package caddymodule

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Tracing is configured the OpenTelemetry way, by the standard environment variables and
// nothing in the Caddyfile, so that every config exports traces as soon as they are set:
//
//   - OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT turns it on: spans go
//     there over OTLP/HTTP (protobuf); OTEL_EXPORTER_OTLP_HEADERS, …_TIMEOUT, …_COMPRESSION and
//     the certificate variables are the exporter's own;
//   - OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES describe this process (default service
//     name harness-edge);
//   - OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG choose the sampler (default: always, or
//     as the caller's trace decided), OTEL_BSP_* tune the batching, OTEL_SPAN_*_LIMIT the limits;
//   - OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn it off again.
//
// Unset, the provider is OpenTelemetry's no-op one: no exporter, no goroutine, no span
// recorded. Incoming trace context is still passed on (to the execution's providers, upstream
// and to agent subprocesses), as W3C Trace Context asks of every intermediary.

// tracingProvider is the process's tracer provider, shared by every Harness handler across
// config reloads like the runtime (a reload provisions the new config before it cleans up the
// old one, so the count never drops to zero in between). The last release flushes and shuts it
// down; the next acquire reads the environment again.
var tracingProvider struct {
	mu       sync.Mutex
	refs     int
	provider trace.TracerProvider
	shutdown func(context.Context) error // nil for the no-op provider
}

// tracePropagator reads and writes W3C traceparent/tracestate and baggage: what Caddy's own
// `tracing` handler writes into the request before ours runs, and what an SDK caller sends.
var tracePropagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// tracingEnabled reports whether the environment asks for traces to be exported.
func tracingEnabled() bool {
	if v, _ := strconv.ParseBool(os.Getenv("OTEL_SDK_DISABLED")); v {
		return false
	}
	if strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")) == "none" {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// acquireTracing returns the process's tracer provider, creating it on the first call.
func acquireTracing(logger *slog.Logger) (trace.TracerProvider, error) {
	t := &tracingProvider
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.refs == 0 {
		provider, shutdown, err := newTracerProvider()
		if err != nil {
			return nil, err
		}
		t.provider, t.shutdown = provider, shutdown
		if shutdown != nil {
			logger.Info("exporting traces over OTLP/HTTP (OTEL_* environment)")
		}
	}
	t.refs++
	return t.provider, nil
}

// releaseTracing drops a reference; the last one flushes what is buffered and shuts the
// exporter down, bounded so that a collector that does not answer cannot hold up Caddy's exit.
// currentTracerProvider is the provider acquireTracing returned, for the runtime a handler opens;
// no-op when none is held.
func currentTracerProvider() trace.TracerProvider {
	t := &tracingProvider
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.provider == nil {
		return noop.NewTracerProvider()
	}
	return t.provider
}

func releaseTracing(logger *slog.Logger) {
	t := &tracingProvider
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.refs == 0 {
		return
	}
	t.refs--
	if t.refs > 0 || t.shutdown == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.shutdown(ctx); err != nil {
		logger.Warn("flushing traces at shutdown", slog.Any("error", err))
	}
	t.provider, t.shutdown = nil, nil
}

func newTracerProvider() (trace.TracerProvider, func(context.Context) error, error) {
	if !tracingEnabled() {
		return noop.NewTracerProvider(), nil, nil
	}
	// The exporter reads the OTEL_EXPORTER_OTLP_* variables itself; it connects lazily.
	exporter, err := otlptracehttp.New(context.Background())
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: OTLP/HTTP exporter: %w", err)
	}
	version, _ := caddy.Version()
	// Later detectors win: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override the defaults.
	res, err := resource.New(context.Background(),
		resource.WithAttributes(
			attribute.String("service.name", "harness-edge"),
			attribute.String("service.version", version)),
		resource.WithTelemetrySDK(),
		resource.WithHost(),
		resource.WithFromEnv())
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: resource from OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	// The sampler, batching and limits come from OTEL_TRACES_SAMPLER, OTEL_BSP_* and
	// OTEL_SPAN_*_LIMIT, which the SDK reads when no option overrides them.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}

// traceRequest continues the caller's trace for a protocol request: the context of Caddy's
// `tracing` handler when the site has one (its server span is in r's context), else the
// traceparent the caller sent, under a server span of our own when tracing is on. end must be
// called when the request is answered.
func traceRequest(tp trace.TracerProvider, r *http.Request) (_ *http.Request, end func()) {
	ctx := r.Context()
	if tp == nil || trace.SpanFromContext(ctx).IsRecording() {
		return r, func() {} // Caddy's tracing handler made the request's span
	}
	// Header.Get("traceparent") would canonicalize the key into a new string on every request.
	if _, off := tp.(noop.TracerProvider); off && len(r.Header["Traceparent"]) == 0 {
		return r, func() {} // nothing to record, nothing to pass on: no allocation
	}
	ctx = tracePropagator.Extract(ctx, propagation.HeaderCarrier(r.Header))
	ctx, span := tp.Tracer("github.com/harness-edge/harness-edge/caddymodule").Start(ctx, r.Method+" "+routePattern(r.URL.Path),
		trace.WithSpanKind(trace.SpanKindServer))
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("http.request.method", r.Method),
			attribute.String("url.path", r.URL.Path),
			attribute.String("http.route", routePattern(r.URL.Path)))
	}
	return r.WithContext(ctx), func() { span.End() }
}

// routePattern is the path with its ids replaced by {id}: a span name of bounded cardinality.
// Under /v1/executions and /v1/conversations, paths alternate an id and a collection
// (/v1/executions/{id}/actions/{id}),
// and a custom method follows an id (/v1/executions/{id}:cancel).
func routePattern(path string) string {
	segments := strings.Split(strings.Trim(path, "/"), "/")
	if len(segments) < 3 || (segments[1] != "executions" && segments[1] != "conversations") {
		return path // /v1/runtime/capabilities, /v1/openapi.yaml, /healthz: no ids
	}
	for i, segment := range segments {
		if i >= 2 && i%2 == 0 {
			_, verb, found := strings.Cut(segment, ":")
			segments[i] = "{id}"
			if found {
				segments[i] += ":" + verb
			}
		}
	}
	return "/" + strings.Join(segments, "/")
}
